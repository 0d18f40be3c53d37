"""`ModelServer`: an aiohttp server speaking enough of the OpenAI API for the official client.

It runs on its own event loop in a background thread, so synchronous tests, async tests and other
processes (over HTTP) can all use it. Each model call takes its answer from, in order: the first
`ModelRoute` that matches it, the script queue, the `handler`, then the fallback of the mode
(`_script`); the routes are `_api`'s, the
answers written by `_writer`.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

from aiohttp import web

from ._api import ModelApi
from ._conversations import ConversationStore
from ._embeddings import EmbeddingRequest
from ._replies import ModelRequest, Reply
from ._responses import ResponseStore
from ._script import Handler, Mode, ModelRoute, Script
from ._socket import listening_socket

DEFAULT_MODELS = ("offline-model", "gpt-4o-mini", "gpt-4.1")


class ModelServerError(RuntimeError):
    """Misuse of a `ModelServer` (e.g. using it before `start()`)."""


class ModelServer(ModelApi):
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
        self._script = Script()
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

    def start(self, listening: socket.socket | None = None) -> ModelServer:
        """Bind, start serving in a background thread, and return once listening. `listening`:
        a socket already bound and listening to serve on instead (its address is the server's)."""
        if self._thread is not None:
            raise ModelServerError("the model server is already started")
        sock = listening if listening is not None else listening_socket(self.host, self.port)
        sock.setblocking(False)
        if listening is not None:
            self.host = listening.getsockname()[0]
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
        self._script.extend(replies)

    @property
    def pending_replies(self) -> int:
        """How many scripted replies are not consumed yet."""
        return len(self._script)

    def route(
        self,
        name: str,
        match: Callable[[ModelRequest], bool],
        answer: Callable[[ModelRequest], Reply | Awaitable[Reply]],
    ) -> ModelRoute:
        """Answer the requests `match` accepts with `answer` (sync or async), apart from the script
        (`ModelRoute`); a route of the same name is replaced. Routes are the server's
        configuration: `reset` keeps them (forgetting their requests); `unroute` removes one."""
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
        self._script.clear()
        with self._lock:
            for kept in self._routes_by_name.values():
                kept.requests.clear()
            self.handler = None
            self.requests.clear()
            self.embedding_requests.clear()
            self.embedding_handler = None
            self.stream_delay = 0.0
        self.responses.clear()
        self.conversations.clear()
