"""`ModelServer`: an aiohttp server speaking enough of the OpenAI API for the official client.

It runs on its own event loop in a background thread, so synchronous tests, async tests and other
processes (over HTTP) can all use it. Each model call takes its answer from, in order: the first
`ModelRoute` that matches it, the script queue, the `handler`, then the fallback of the mode
(offline answer, or in scripted mode a 500 ``script_exhausted`` error that tells the client not to
retry).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import socket
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any, Literal

from aiohttp import web

from ._chat import chat_chunks, chat_completion, parse_chat
from ._conversations import ConversationStore, conversation_id_of, conversation_not_found
from ._embeddings import EmbeddingRequest, embeddings_answer, hashed_embedding, parse_embeddings
from ._offline import offline_reply
from ._replies import ErrorSpec, ModelRequest, Reply, ToolCall
from ._responses import (
    ResponseStore,
    StoredResponse,
    input_items,
    items_to_messages,
    not_found,
    output_items,
    parse_responses,
    response_events,
    response_object,
)
from ._wire import RequestRejected, compute_usage, new_id, sse, truncate_words

log = logging.getLogger("agents.testing")

Mode = Literal["offline", "scripted"]
Handler = Callable[[ModelRequest], "Reply | Awaitable[Reply | None] | None"]

DEFAULT_MODELS = ("offline-model", "gpt-4o-mini", "gpt-4.1")
STREAM_ERROR = {
    "message": "The server had an error while processing your request.",
    "type": "server_error",
    "code": "server_error",
}
"""What an interrupted stream sends (`Reply.interrupted`), as the service reports a failure it
hits after the answer began."""
_PREFIXES = ("/v1", "/openai/v1", "/openai", "")


class ModelServerError(RuntimeError):
    """Misuse of a `ModelServer` (e.g. using it before `start()`)."""


def _error_response(spec: ErrorSpec) -> web.Response:
    headers = {"x-request-id": new_id("req_"), **spec.headers}
    if spec.retry_after is not None:
        seconds = spec.retry_after
        headers["retry-after"] = str(int(seconds)) if float(seconds).is_integer() else f"{seconds:g}"
        headers["retry-after-ms"] = str(int(seconds * 1000))
    return web.json_response(spec.body(), status=spec.status, headers=headers)


def _deletion(
    deleted: bool, object_id: str, kind: str, missing: Callable[[str], RequestRejected]
) -> web.Response:
    """The service's answer to a DELETE: the deletion receipt, or 404 when nothing had that id."""
    if not deleted:
        return _error_response(missing(object_id).spec)
    return web.json_response({"id": object_id, "object": f"{kind}.deleted", "deleted": True})


def _item_list(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "object": "list",
        "data": items,
        "first_id": items[0]["id"] if items else None,
        "last_id": items[-1]["id"] if items else None,
        "has_more": False,
    }


@dataclass(eq=False)
class ModelRoute:
    """Requests of one kind answered apart (`ModelServer.route`): a request `match` accepts is
    answered by `answer` and recorded in `requests`, never in `ModelServer.requests`, and it never
    takes a scripted reply. For calls a test does not drive (a background job of the host, such as
    a conversation summary) that could otherwise arrive during another test and take its reply."""

    name: str
    match: Callable[[ModelRequest], bool]
    answer: Callable[[ModelRequest], Reply | Awaitable[Reply]]
    requests: list[ModelRequest] = field(default_factory=list)


class ModelServer:
    """A real local OpenAI-compatible HTTP server with scripted and offline (deterministic) replies."""

    def __init__(
        self,
        mode: Mode = "offline",
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        api_key: str | None = None,
        models: tuple[str, ...] = DEFAULT_MODELS,
        stream_delay: float = 0.0,
    ) -> None:
        if stream_delay < 0:
            raise ValueError("stream_delay must not be negative")
        self.stream_delay = stream_delay
        """Seconds between two chunks of a streamed answer (0: as fast as possible), so a client
        sees tokens arrive one by one the way a real model sends them."""
        if mode not in ("offline", "scripted"):
            raise ValueError(f"mode must be 'offline' or 'scripted', not {mode!r}")
        self.mode: Mode = mode
        self.host = host
        self.port = port
        self.api_key = api_key
        self.models = models
        self.handler: Handler | None = None
        self.requests: list[ModelRequest] = []
        self.embedding_requests: list[EmbeddingRequest] = []
        """Every embeddings request answered, in order (tests count them)."""
        self.embedding_handler: Callable[[str, int], Any] | None = None
        """Overrides the vectors: called with each text and the dimensions asked, its return value is
        sent as that text's ``embedding`` as is (so a test can send a wrong one)."""
        self.responses = ResponseStore()
        self.conversations = ConversationStore()
        self._script: deque[Reply] = deque()
        self._routes_by_name: dict[str, ModelRoute] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._closing: asyncio.Event | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The OpenAI client's `base_url`, e.g. ``http://127.0.0.1:PORT/v1``."""
        if self._thread is None:
            raise ModelServerError("the model server is not started")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    @property
    def url(self) -> str:
        """Root URL without `/v1` (an Azure OpenAI `azure_endpoint`)."""
        return self.base_url[: -len("/v1")]

    def start(self) -> ModelServer:
        """Bind, start serving in a background thread, and return once listening."""
        if self._thread is not None:
            raise ModelServerError("the model server is already started")
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError:
            sock.close()
            raise
        sock.listen(1024)
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._serve(sock))
            except BaseException as err:  # reported to start()'s caller
                failure.append(err)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._cleanup())
            loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=run, name=f"model-server-{self.port}", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise ModelServerError(f"the model server failed to start: {failure[0]!r}") from failure[0]
        return self

    async def _serve(self, sock: socket.socket) -> None:
        self._closing = asyncio.Event()
        app = web.Application(client_max_size=256 * 1024 * 1024)
        self._routes(app)
        # handler_cancellation: a client that times out or disconnects ends its (possibly hung) call.
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()

    async def _cleanup(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def stop(self) -> None:
        """Stop serving; open (hung or delayed) calls are cut off. Safe to call twice."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if self._closing is not None:
            loop.call_soon_threadsafe(self._closing.set)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        self._loop = None
        self._thread = None

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> ModelServer:
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.stop)

    # -- scripting ----------------------------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        """Queue replies; each model call consumes the next one (FIFO)."""
        for reply in replies:
            if not isinstance(reply, Reply):
                raise TypeError(f"script() takes Reply objects, not {reply!r}")
        with self._lock:
            self._script.extend(replies)

    @property
    def pending_replies(self) -> int:
        """How many scripted replies are not consumed yet."""
        with self._lock:
            return len(self._script)

    def route(
        self,
        name: str,
        match: Callable[[ModelRequest], bool],
        answer: Callable[[ModelRequest], Reply | Awaitable[Reply]],
    ) -> ModelRoute:
        """Answer the requests `match` accepts with `answer` (sync or async), apart from the script
        (`ModelRoute`);
        a route of the same name is replaced. Routes are the server's configuration: `reset` keeps
        them (forgetting their requests); `unroute` removes one."""
        made = ModelRoute(name, match, answer)
        with self._lock:
            self._routes_by_name[name] = made
        return made

    def unroute(self, name: str) -> None:
        """Remove the route `name` (nothing when there is none)."""
        with self._lock:
            self._routes_by_name.pop(name, None)

    def routed(self, name: str) -> ModelRoute | None:
        """The route `name`, or None."""
        with self._lock:
            return self._routes_by_name.get(name)

    def reset(self) -> None:
        """Forget the script, the handler, received requests (the routes' too, but not the routes),
        stored responses and conversations."""
        with self._lock:
            self._script.clear()
            for kept in self._routes_by_name.values():
                kept.requests.clear()
            self.handler = None
            self.requests.clear()
            self.embedding_requests.clear()
            self.embedding_handler = None
            self.stream_delay = 0.0
        self.responses.clear()
        self.conversations.clear()

    async def _routed(self, request: ModelRequest) -> Reply | None:
        """The answer of the first route matching `request` (recorded there), else None."""
        with self._lock:
            routes = list(self._routes_by_name.values())
        for candidate in routes:
            try:
                if not candidate.match(request):
                    continue
                candidate.requests.append(request)
                answer = candidate.answer(request)
                reply = await answer if inspect.isawaitable(answer) else answer
            except Exception as err:
                log.exception("model server route %s raised", candidate.name)
                reply = Reply.error(
                    500,
                    f"agents.testing route {candidate.name!r} raised {err!r}",
                    code="handler_error",
                    headers={"x-should-retry": "false"},
                )
            return reply
        return None

    async def _choose(self, request: ModelRequest) -> Reply:
        with self._lock:
            if self._script:
                return self._script.popleft()
        handler = self.handler
        if handler is not None:
            try:
                answer = handler(request)
                if inspect.isawaitable(answer):
                    answer = await answer
            except Exception as err:
                log.exception("model server handler raised")
                return Reply.error(
                    500,
                    f"agents.testing handler raised {err!r}",
                    code="handler_error",
                    headers={"x-should-retry": "false"},
                )
            if answer is not None:
                if not isinstance(answer, Reply):
                    return Reply.error(
                        500,
                        f"agents.testing handler returned {answer!r}, not a Reply",
                        code="handler_error",
                        headers={"x-should-retry": "false"},
                    )
                return answer
        if self.mode == "scripted":
            return Reply.error(
                500,
                "agents.testing.ModelServer: script exhausted (no scripted reply left, no handler answer)",
                code="script_exhausted",
                headers={"x-should-retry": "false"},
            )
        return offline_reply(request)

    # -- HTTP ---------------------------------------------------------------------------------

    def _routes(self, app: web.Application) -> None:
        for prefix in _PREFIXES:
            app.router.add_post(f"{prefix}/chat/completions", self._chat)
            app.router.add_post(f"{prefix}/responses", self._responses)
            app.router.add_get(prefix + "/responses/{response_id}", self._get_response)
            app.router.add_delete(prefix + "/responses/{response_id}", self._delete_response)
            app.router.add_post(f"{prefix}/conversations", self._create_conversation)
            app.router.add_get(prefix + "/conversations/{conversation_id}", self._get_conversation)
            app.router.add_delete(prefix + "/conversations/{conversation_id}", self._delete_conversation)
            app.router.add_get(prefix + "/conversations/{conversation_id}/items", self._list_items)
            app.router.add_post(prefix + "/conversations/{conversation_id}/items", self._add_items)
            app.router.add_post(f"{prefix}/embeddings", self._embeddings)
            app.router.add_get(f"{prefix}/models", self._list_models)
            app.router.add_get(prefix + "/models/{model}", self._get_model)
        # Azure OpenAI's deployment-scoped routes (`AzureOpenAI(azure_endpoint=server.url, ...)`).
        app.router.add_post("/openai/deployments/{deployment}/chat/completions", self._chat)
        app.router.add_post("/openai/deployments/{deployment}/embeddings", self._embeddings)
        app.router.add_route("*", "/{tail:.*}", self._unknown)

    def _authorised(self, http: web.Request) -> bool:
        if self.api_key is None:
            return True
        bearer = http.headers.get("Authorization", "")
        return bearer == f"Bearer {self.api_key}" or http.headers.get("api-key") == self.api_key

    async def _read_body(self, http: web.Request) -> dict[str, Any]:
        try:
            body = json.loads(await http.read() or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise RequestRejected(
                "We could not parse the JSON body of your request. (HINT: This likely means you aren't using "
                "your HTTP library correctly.)",
            ) from err
        if not isinstance(body, dict):
            raise RequestRejected("The request body must be a JSON object.")
        return body

    async def _chat(self, http: web.Request) -> web.StreamResponse:
        return await self._model_call(http, "chat")

    async def _responses(self, http: web.Request) -> web.StreamResponse:
        return await self._model_call(http, "responses")

    async def _model_call(self, http: web.Request, api: Literal["chat", "responses"]) -> web.StreamResponse:
        if not self._authorised(http):
            denied = Reply.error(401).failure
            assert denied is not None
            return _error_response(denied)
        context: list[dict[str, Any]] = []
        new_items: list[dict[str, Any]] = []
        try:
            body = await self._read_body(http)
            if api == "chat":
                messages, tools = parse_chat(body)
            else:
                messages, tools, context, new_items = parse_responses(
                    body, self.responses, self.conversations
                )
        except RequestRejected as rejected:
            log.warning("model server rejected %s %s: %s", http.method, http.path, rejected)
            return _error_response(rejected.spec)
        request = ModelRequest(
            api=api, body=body, messages=messages, tools=tools, path=http.path, headers=dict(http.headers)
        )
        try:
            reply = await self._routed(request)
            if reply is None:
                self.requests.append(request)
                reply = await self._choose(request)
            return await self._answer(http, request, reply, context, new_items)
        except asyncio.CancelledError:
            request.disconnected = True
            raise

    async def _answer(
        self,
        http: web.Request,
        request: ModelRequest,
        reply: Reply,
        context: list[dict[str, Any]],
        new_items: list[dict[str, Any]],
    ) -> web.StreamResponse:
        assert self._closing is not None
        while reply.kind == "delay":
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), reply.seconds)
            if self._closing.is_set():
                raise web.HTTPServiceUnavailable()
            reply = reply.then or offline_reply(request)
        if reply.kind == "hang":
            await self._closing.wait()
            raise web.HTTPServiceUnavailable()
        if reply.kind == "disconnect":
            if http.transport is not None:
                http.transport.abort()
            raise asyncio.CancelledError()
        if reply.kind == "error":
            assert reply.failure is not None
            return _error_response(reply.failure)
        if reply.kind == "raw":
            return web.Response(status=200, text=reply.content or "", content_type="application/json")
        reply = self._finish(request, reply)
        if request.api == "chat":
            return await self._send_chat(http, request, reply)
        return await self._send_response(http, request, reply, context, new_items)

    @staticmethod
    def _finish(request: ModelRequest, reply: Reply) -> Reply:
        """Assign call ids and apply the request's output-token limit."""
        prefix = "call_"
        calls = tuple(c if c.call_id else ToolCall(c.name, c.arguments, new_id(prefix)) for c in reply.calls)
        reply = replace(reply, calls=calls)
        limit = request.max_output_tokens
        if limit is not None and reply.content is not None:
            cut = truncate_words(reply.content, limit)
            if cut != reply.content:
                reply = replace(reply, content=cut, finish_reason="length")
        return reply

    async def _send_chat(self, http: web.Request, request: ModelRequest, reply: Reply) -> web.StreamResponse:
        usage = compute_usage(reply, request)
        if not request.stream:
            return web.json_response(
                chat_completion(reply, request, usage), headers={"x-request-id": new_id("req_")}
            )
        stream = await self._open_stream(http)
        for index, chunk in enumerate(chat_chunks(reply, request, usage)):
            if index == reply.interrupt_after:
                return await self._interrupt(http, stream, reply, {"error": STREAM_ERROR})
            await self._pace(index)
            await stream.write(sse(chunk))
        await stream.write(sse("[DONE]"))
        await stream.write_eof()
        return stream

    async def _send_response(
        self,
        http: web.Request,
        request: ModelRequest,
        reply: Reply,
        context: list[dict[str, Any]],
        new_items: list[dict[str, Any]],
    ) -> web.StreamResponse:
        usage = compute_usage(reply, request)
        response_id = new_id("resp_")
        status = "incomplete" if reply.finish_reason == "length" else "completed"
        output = output_items(reply)
        final = response_object(request, response_id, output, usage, status=status, created_at=time.time())
        if request.body.get("store", True) is not False:
            self.responses.put(
                response_id, StoredResponse(items=context + new_items + output, response=final)
            )
        conversation_id = conversation_id_of(request.body.get("conversation"))
        if conversation_id is not None:
            self.conversations.append(conversation_id, new_items + output)
        if not request.stream:
            return web.json_response(final, headers={"x-request-id": new_id("req_")})
        stream = await self._open_stream(http)
        for index, event in enumerate(response_events(request, response_id, reply, final)):
            if index == reply.interrupt_after:
                error = {
                    "type": "error",
                    "code": STREAM_ERROR["code"],
                    "message": STREAM_ERROR["message"],
                    "param": None,
                    "sequence_number": index,
                }
                return await self._interrupt(http, stream, reply, error, event="error")
            await self._pace(index)
            await stream.write(sse(event, event=event["type"]))
        await stream.write_eof()
        return stream

    @staticmethod
    async def _interrupt(
        http: web.Request,
        stream: web.StreamResponse,
        reply: Reply,
        error: dict[str, Any],
        event: str | None = None,
    ) -> web.StreamResponse:
        """Break a streamed answer off as `reply.interruption` says (see `Reply.interrupted`)."""
        if reply.interruption == "disconnect":
            if http.transport is not None:
                http.transport.abort()
            raise asyncio.CancelledError()
        await stream.write(sse(error, event=event))
        await stream.write_eof()
        return stream

    async def _pace(self, index: int) -> None:
        # The first chunk goes out at once (time to first token is scripted with Reply.delay).
        if index and self.stream_delay:
            await asyncio.sleep(self.stream_delay)

    @staticmethod
    async def _open_stream(http: web.Request) -> web.StreamResponse:
        stream = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                "x-request-id": new_id("req_"),
            }
        )
        await stream.prepare(http)
        return stream

    async def _get_response(self, http: web.Request) -> web.Response:
        stored = self.responses.get(http.match_info["response_id"])
        if stored is None:
            return _error_response(not_found(http.match_info["response_id"]).spec)
        return web.json_response(stored.response)

    async def _delete_response(self, http: web.Request) -> web.Response:
        response_id = http.match_info["response_id"]
        return _deletion(self.responses.delete(response_id), response_id, "response", not_found)

    async def _create_conversation(self, http: web.Request) -> web.Response:
        try:
            body = await self._read_body(http) if http.can_read_body else {}
            items = input_items({"input": body.get("items") or []})
            items_to_messages(items)  # rejects malformed items now rather than on first use
        except RequestRejected as rejected:
            return _error_response(rejected.spec)
        conversation = self.conversations.create(items, body.get("metadata"))
        return web.json_response(conversation.to_json())

    async def _get_conversation(self, http: web.Request) -> web.Response:
        found = self.conversations.get(http.match_info["conversation_id"])
        if found is None:
            return _error_response(conversation_not_found(http.match_info["conversation_id"]).spec)
        return web.json_response(found.to_json())

    async def _delete_conversation(self, http: web.Request) -> web.Response:
        conversation_id = http.match_info["conversation_id"]
        deleted = self.conversations.delete(conversation_id)
        return _deletion(deleted, conversation_id, "conversation", conversation_not_found)

    async def _list_items(self, http: web.Request) -> web.Response:
        try:
            items = self.conversations.items(http.match_info["conversation_id"])
        except RequestRejected as rejected:
            return _error_response(replace(rejected.spec, param=None))
        if http.query.get("order", "desc") == "desc":
            items.reverse()
        return web.json_response(_item_list(items))

    async def _add_items(self, http: web.Request) -> web.Response:
        try:
            body = await self._read_body(http)
            items = input_items({"input": body.get("items")})
            items_to_messages(items)
            added = self.conversations.append(http.match_info["conversation_id"], items)
        except RequestRejected as rejected:
            return _error_response(rejected.spec)
        return web.json_response(_item_list(added))

    async def _embeddings(self, http: web.Request) -> web.Response:
        """Deterministic embeddings (`_embeddings.hashed_embedding`), or the `embedding_handler`'s."""
        if not self._authorised(http):
            denied = Reply.error(401).failure
            assert denied is not None
            return _error_response(denied)
        try:
            body = await self._read_body(http)
            model, texts, dimensions, encoding = parse_embeddings(body, http.match_info.get("deployment"))
        except RequestRejected as rejected:
            log.warning("model server rejected %s %s: %s", http.method, http.path, rejected)
            return _error_response(rejected.spec)
        with self._lock:
            self.embedding_requests.append(EmbeddingRequest(model, tuple(texts), http.path))
            handler = self.embedding_handler
        if handler is not None:
            vectors = [handler(text, dimensions) for text in texts]
        else:
            vectors = [hashed_embedding(text, dimensions) for text in texts]
        return web.json_response(embeddings_answer(model, texts, vectors, encoding))

    def _model_json(self, name: str) -> dict[str, Any]:
        return {"id": name, "object": "model", "created": 0, "owned_by": "agents.testing"}

    async def _list_models(self, http: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [self._model_json(m) for m in self.models]})

    async def _get_model(self, http: web.Request) -> web.Response:
        name = http.match_info["model"]
        if name not in self.models:
            return _error_response(
                RequestRejected(
                    f"The model '{name}' does not exist", param="model", code="model_not_found", status=404
                ).spec
            )
        return web.json_response(self._model_json(name))

    async def _unknown(self, http: web.Request) -> web.Response:
        return _error_response(RequestRejected(f"Invalid URL ({http.method} {http.path})", status=404).spec)
