"""Forwarding an HTTP invocation to the worker's own HTTP server (devhost.functions._http_proxy)."""

from __future__ import annotations

import asyncio
import inspect
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
import uvicorn
from aiohttp import web

from devhost.functions import _http_proxy as http_proxy
from devhost.functions._http_proxy import CONNECT_ATTEMPTS, INVOCATION_ID_HEADER, HttpProxy
from devhost.worker import InvocationRequest, InvocationResponse
from devhost.worker._messages import StatusResult

UVICORN_KEEP_ALIVE = inspect.signature(uvicorn.Config).parameters["timeout_keep_alive"].default
"""Seconds the runtime's HTTP server (uvicorn, with its defaults) keeps an idle connection."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class FakeWorker:
    """A worker whose HTTP server is started by the test (or never), answering every invocation."""

    name = "test-worker"

    def __init__(self, port: int) -> None:
        self.http_uri = f"http://127.0.0.1:{port}"
        self.failed = False
        self.requested = asyncio.Event()  # as the runtime, the invocation ends once its request came

    async def invoke(self, call: InvocationRequest) -> InvocationResponse:
        if self.failed:
            return InvocationResponse(call.invocation_id, result=StatusResult(status=StatusResult.Failure))
        await self.requested.wait()
        return InvocationResponse(call.invocation_id, result=StatusResult(status=StatusResult.Success))


async def _serve(port: int, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.AppRunner:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner


@pytest.fixture
async def front() -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """The host's side: a server whose handler forwards to `state["worker"]`."""
    state: dict[str, Any] = {}
    proxy = HttpProxy(logging.getLogger("test.proxy"))

    async def handler(request: web.Request) -> web.StreamResponse:
        call = InvocationRequest(invocation_id="inv-1", function_id="f")
        return await proxy.forward(request, await request.read(), state["worker"], call)

    port = _free_port()
    runner = await _serve(port, handler)
    try:
        yield f"http://127.0.0.1:{port}", state
    finally:
        await runner.cleanup()
        await proxy.close()


async def test_a_worker_server_that_starts_late_still_gets_the_request(
    front: tuple[str, dict[str, Any]],
) -> None:
    # A restarted worker answers init before its HTTP server listens: the host tries the
    # connection again (50 ms doubling to 250 ms) instead of failing the request with a 500.
    url, state = front
    port = _free_port()
    state["worker"] = worker = FakeWorker(port)
    seen: list[tuple[str, bytes]] = []

    async def worker_server(request: web.Request) -> web.Response:
        seen.append((request.headers[INVOCATION_ID_HEADER], await request.read()))
        worker.requested.set()
        return web.Response(text="answered")

    async with aiohttp.ClientSession() as http:
        sent = asyncio.ensure_future(http.post(f"{url}/api/run", data=b"the body"))
        await asyncio.sleep(0.4)  # several refused connections
        runner = await _serve(port, worker_server)
        try:
            response = await asyncio.wait_for(sent, 10)
            assert response.status == 200 and await response.text() == "answered"
        finally:
            await runner.cleanup()
    assert seen == [("inv-1", b"the body")]  # once: the refused attempts never reached it


async def test_a_worker_server_that_never_listens_fails_after_the_hosts_attempts(
    front: tuple[str, dict[str, Any]], caplog: pytest.LogCaptureFixture,
) -> None:
    url, state = front
    state["worker"] = FakeWorker(_free_port())
    async with aiohttp.ClientSession() as http:
        response = await http.post(f"{url}/api/run", data=b"x")
        assert response.status == 500
        assert (await response.json())["code"] == "function_failed"
    retries = [r for r in caplog.records if "trying again" in r.getMessage()]
    assert len(retries) == CONNECT_ATTEMPTS - 1


async def test_no_more_attempts_once_the_invocation_failed(
    front: tuple[str, dict[str, Any]], caplog: pytest.LogCaptureFixture,
) -> None:
    url, state = front
    worker = FakeWorker(_free_port())
    worker.failed = True  # the invocation's answer comes at once, a failure
    state["worker"] = worker
    async with aiohttp.ClientSession() as http:
        response = await http.post(f"{url}/api/run", data=b"x")
        assert response.status == 500
    retries = [r for r in caplog.records if "trying again" in r.getMessage()]
    assert len(retries) <= 1  # the first refusal may come before the invocation's answer


async def test_connections_to_the_worker_are_reused_until_idle_for_idle_seconds(
    front: tuple[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As the Functions host pools its connections to the worker's HTTP server; one left idle is
    # let go of before the server (uvicorn: 5 s) would close it under a request.
    assert http_proxy.IDLE_SECONDS < UVICORN_KEEP_ALIVE
    monkeypatch.setattr(http_proxy, "IDLE_SECONDS", 0.3)
    url, state = front
    port = _free_port()
    state["worker"] = worker = FakeWorker(port)
    peers: list[int] = []

    async def worker_server(request: web.Request) -> web.Response:
        assert request.transport is not None
        peers.append(request.transport.get_extra_info("peername")[1])
        worker.requested.set()
        return web.Response(text="answered")

    runner = await _serve(port, worker_server)
    try:
        async with aiohttp.ClientSession() as http:
            for pause in (0.0, 0.0, 0.6):
                await asyncio.sleep(pause)
                response = await http.post(f"{url}/api/run", data=b"x")
                assert response.status == 200 and await response.text() == "answered"
    finally:
        await runner.cleanup()
    assert len(peers) == 3
    assert peers[0] == peers[1]  # one connection for requests in a row
    assert peers[2] != peers[1]  # idle past IDLE_SECONDS: a new one


async def test_a_client_that_goes_away_is_one_debug_line_not_a_traceback(
    front: tuple[str, dict[str, Any]], caplog: pytest.LogCaptureFixture,
) -> None:
    # A health check that gives up while the host starts, or a browser closing a stream: the
    # forwarder's next write fails on the closed transport. That is the client's choice, not a
    # server error: no "Error handling request" traceback from the server, one debug line.
    caplog.set_level(logging.DEBUG)
    url, state = front
    port = _free_port()
    state["worker"] = worker = FakeWorker(port)
    finished = asyncio.Event()

    async def worker_server(request: web.Request) -> web.StreamResponse:
        worker.requested.set()
        response = web.StreamResponse()
        await response.prepare(request)
        try:
            for _ in range(40):  # goes on writing after the client left
                await response.write(b"chunk ")
                await asyncio.sleep(0.025)
        except ConnectionError:
            pass  # the forwarder closed the forwarded request
        finally:
            finished.set()
        return response

    runner = await _serve(port, worker_server)
    try:
        async with aiohttp.ClientSession() as http:
            response = await http.get(f"{url}/api/stream")
            assert await response.content.readany()
            response.close()  # the client goes away mid-stream
        await asyncio.wait_for(finished.wait(), 10)
        await asyncio.sleep(0.1)  # the front server's handler returns after the failed write
    finally:
        await runner.cleanup()
    tracebacks = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert tracebacks == [], [r.getMessage() for r in tracebacks]
    gone = [r for r in caplog.records if r.name == "test.proxy" and "went away" in r.getMessage()]
    assert len(gone) == 1 and gone[0].levelno == logging.DEBUG
