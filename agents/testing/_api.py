"""The model server's HTTP API: the routes the official client calls (Chat Completions, the
Responses API with stored responses and conversations, embeddings, models), under every prefix
the client uses and Azure OpenAI's deployment-scoped paths. `ModelApi` is the part of
`ModelServer` that answers them."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal

from aiohttp import web

from ._chat import parse_chat
from ._conversations import ConversationStore, conversation_id_of, conversation_not_found
from ._embeddings import EmbeddingRequest, embeddings_answer, hashed_embedding, parse_embeddings
from ._offline import offline_reply
from ._replies import ModelRequest, Reply
from ._responses import (
    ResponseStore,
    StoredResponse,
    input_items,
    items_to_messages,
    not_found,
    output_items,
    parse_responses,
    response_object,
)
from ._script import Handler, Mode, ModelRoute, Script, choose, routed
from ._wire import RequestRejected, compute_usage, new_id
from ._writer import abort, error_response, finish, json_answer, send_chat, send_response_events

log = logging.getLogger("agents.testing")

_PREFIXES = ("/v1", "/openai/v1", "/openai", "")


def _deletion(
    deleted: bool, object_id: str, kind: str, missing: Callable[[str], RequestRejected]
) -> web.Response:
    """The service's answer to a DELETE: the deletion receipt, or 404 when nothing had that id."""
    if not deleted:
        return error_response(missing(object_id).spec)
    return web.json_response({"id": object_id, "object": f"{kind}.deleted", "deleted": True})


def _item_list(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "object": "list",
        "data": items,
        "first_id": items[0]["id"] if items else None,
        "last_id": items[-1]["id"] if items else None,
        "has_more": False,
    }


def _denied() -> web.Response:
    denied = Reply.error(401).failure
    assert denied is not None
    return error_response(denied)


class ModelApi:
    """The HTTP handlers of `ModelServer` (which sets every attribute below)."""

    mode: Mode
    api_key: str | None
    models: tuple[str, ...]
    stream_delay: float
    handler: Handler | None
    requests: list[ModelRequest]
    embedding_requests: list[EmbeddingRequest]
    embedding_handler: Callable[[str, int], Any] | None
    responses: ResponseStore
    conversations: ConversationStore
    _script: Script
    _routes_by_name: dict[str, ModelRoute]
    _lock: threading.Lock
    _closing: asyncio.Event | None

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

    # -- model calls --------------------------------------------------------------------------

    async def _chat(self, http: web.Request) -> web.StreamResponse:
        return await self._model_call(http, "chat")

    async def _responses(self, http: web.Request) -> web.StreamResponse:
        return await self._model_call(http, "responses")

    async def _model_call(self, http: web.Request, api: Literal["chat", "responses"]) -> web.StreamResponse:
        if not self._authorised(http):
            return _denied()
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
            return error_response(rejected.spec)
        request = ModelRequest(
            api=api, body=body, messages=messages, tools=tools, path=http.path, headers=dict(http.headers)
        )
        try:
            with self._lock:
                routes = list(self._routes_by_name.values())
            chosen = await routed(routes, request)
            if chosen is None:
                self.requests.append(request)
                chosen = await choose(self._script, self.handler, self.mode, request)
            settled = await self._settle(http, request, chosen)
            if isinstance(settled, web.StreamResponse):
                return settled
            reply = finish(request, settled)
            if request.api == "chat":
                return await send_chat(http, request, reply, self.stream_delay)
            return await self._send_response(http, request, reply, context, new_items)
        except asyncio.CancelledError:
            request.disconnected = True
            raise

    async def _settle(
        self, http: web.Request, request: ModelRequest, reply: Reply
    ) -> Reply | web.StreamResponse:
        """The reply once its delays are over, or the answer of one that is no model answer (an
        error, raw text); a hang or a disconnect never returns."""
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
            abort(http)
        if reply.kind == "error":
            assert reply.failure is not None
            return error_response(reply.failure)
        if reply.kind == "raw":
            return web.Response(status=200, text=reply.content or "", content_type="application/json")
        return reply

    async def _send_response(
        self,
        http: web.Request,
        request: ModelRequest,
        reply: Reply,
        context: list[dict[str, Any]],
        new_items: list[dict[str, Any]],
    ) -> web.StreamResponse:
        """A Responses API answer, stored (unless `store` is false) and added to its conversation."""
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
            return json_answer(final)
        return await send_response_events(http, request, reply, response_id, final, self.stream_delay)

    # -- stored responses and conversations ---------------------------------------------------

    async def _get_response(self, http: web.Request) -> web.Response:
        stored = self.responses.get(http.match_info["response_id"])
        if stored is None:
            return error_response(not_found(http.match_info["response_id"]).spec)
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
            return error_response(rejected.spec)
        conversation = self.conversations.create(items, body.get("metadata"))
        return web.json_response(conversation.to_json())

    async def _get_conversation(self, http: web.Request) -> web.Response:
        found = self.conversations.get(http.match_info["conversation_id"])
        if found is None:
            return error_response(conversation_not_found(http.match_info["conversation_id"]).spec)
        return web.json_response(found.to_json())

    async def _delete_conversation(self, http: web.Request) -> web.Response:
        conversation_id = http.match_info["conversation_id"]
        deleted = self.conversations.delete(conversation_id)
        return _deletion(deleted, conversation_id, "conversation", conversation_not_found)

    async def _list_items(self, http: web.Request) -> web.Response:
        try:
            items = self.conversations.items(http.match_info["conversation_id"])
        except RequestRejected as rejected:
            return error_response(replace(rejected.spec, param=None))
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
            return error_response(rejected.spec)
        return web.json_response(_item_list(added))

    # -- embeddings and models ----------------------------------------------------------------

    async def _embeddings(self, http: web.Request) -> web.Response:
        """Deterministic embeddings (`_embeddings.hashed_embedding`), or the `embedding_handler`'s."""
        if not self._authorised(http):
            return _denied()
        try:
            body = await self._read_body(http)
            model, texts, dimensions, encoding = parse_embeddings(body, http.match_info.get("deployment"))
        except RequestRejected as rejected:
            log.warning("model server rejected %s %s: %s", http.method, http.path, rejected)
            return error_response(rejected.spec)
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
            return error_response(
                RequestRejected(
                    f"The model '{name}' does not exist", param="model", code="model_not_found", status=404
                ).spec
            )
        return web.json_response(self._model_json(name))

    async def _unknown(self, http: web.Request) -> web.Response:
        return error_response(RequestRejected(f"Invalid URL ({http.method} {http.path})", status=404).spec)
