"""A webhook receiver for the end-to-end tests: an aiohttp server on loopback, on a thread of its
own, that records every POST and answers as each path asks, and the verification snippet of
docs/hosting.md "Webhooks" (read from the docs: the tests check what users are told to run)."""

from __future__ import annotations

import asyncio
import contextlib
import pathlib
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from e2e_support import REPO, HostProcess


def documented_verify() -> Callable[..., bool]:
    """The `verify` function of docs/hosting.md "Webhooks", run as the docs print it: the tests
    check deliveries with exactly what users are told to run."""
    text = (REPO / "docs" / "hosting.md").read_text()
    section = text[text.index("### Webhooks") :]
    snippet = re.search(r"```python\n(.*?)```", section, re.S)
    assert snippet is not None and "def verify(" in snippet.group(1), "the docs' snippet is missing"
    scope: dict[str, Any] = {}
    exec(compile(snippet.group(1), "docs/hosting.md#webhooks", "exec"), scope)
    verify: Callable[..., bool] = scope["verify"]
    return verify


verify = documented_verify()


@dataclass
class Delivery:
    path: str
    headers: dict[str, str]
    body: bytes
    answered: int


@dataclass
class Receiver:
    """Paths: `/flaky/...` answers 500 twice, then 200; `/redirect/...` answers 302 to `/ok/moved`;
    `/big/...` answers 200 with an endless body; `/gone/...` answers 410; `/slow/...` does not
answer the first time (recorded as answered 0), then 200; anything else 200."""

    port: int
    deliveries: list[Delivery] = field(default_factory=list)
    _loop: asyncio.AbstractEventLoop | None = None
    _runner: web.AppRunner | None = None

    def to(self, path: str) -> list[Delivery]:
        return [d for d in self.deliveries if d.path == path]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        path = request.path
        earlier = len(self.to(path))
        if path.startswith("/slow/") and earlier == 0:
            self.deliveries.append(Delivery(path, dict(request.headers), body, 0))
            await asyncio.sleep(30)  # past the attempt's timeout: the app gives up on it
            return web.Response(status=504, text="too late")
        if path.startswith("/flaky/") and earlier < 2:
            status = 500
        elif path.startswith("/redirect/"):
            status = 302
        elif path.startswith("/gone/"):
            status = 410
        else:
            status = 200
        self.deliveries.append(Delivery(path, dict(request.headers), body, status))
        if path.startswith("/big/"):
            answer = web.StreamResponse(status=200)
            await answer.prepare(request)
            chunk = b"x" * 65536
            try:
                for _ in range(100_000):  # 6.5 GB if read to the end
                    await answer.write(chunk)
            except (ConnectionError, asyncio.CancelledError):
                pass
            return answer
        if status == 302:
            return web.Response(status=302, headers={"Location": f"http://127.0.0.1:{self.port}/ok/moved"})
        return web.Response(status=status, text="ok" if status == 200 else "no")

    def start(self) -> Receiver:
        started = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            app = web.Application()
            app.router.add_post("/{tail:.*}", self._handle)
            self._runner = web.AppRunner(app)
            loop.run_until_complete(self._runner.setup())
            loop.run_until_complete(web.TCPSite(self._runner, "127.0.0.1", self.port).start())
            started.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        threading.Thread(target=serve, daemon=True, name="webhook-receiver").start()
        if not started.wait(10):
            raise AssertionError("the webhook receiver did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)


def webhook_settings(port: int, secret: str, hosts: str = "") -> dict[str, str]:
    """The app settings of a host whose webhooks reach the receiver on `port` (and `hosts`), with
    quick retries for the tests: 0.2 s, 0.4 s, ..., the run's end looked for every 0.2 s."""
    return {
        "DURABLE_AGENTS_WEBHOOK_HOSTS": ", ".join(h for h in (hosts, f"127.0.0.1:{port}") if h),
        "DURABLE_AGENTS_WEBHOOK_SECRET": secret,
        "DURABLE_AGENTS_WEBHOOK_FIRST_RETRY_SECONDS": "0.2",
        "DURABLE_AGENTS_WEBHOOK_POLL_SECONDS": "0.2",
        "DURABLE_AGENTS_WEBHOOK_ATTEMPTS": "5",
        "DURABLE_AGENTS_WEBHOOK_TIMEOUT_SECONDS": "2",
    }


@contextlib.contextmanager
def webhook_host(root: pathlib.Path, model_base_url: str, env: dict[str, str]) -> Iterator[HostProcess]:
    """`python -m devhost` with `env` (webhook_settings), stopped on leaving."""
    host = HostProcess(root / "data", model_base_url, root / "host.log", extra_env=env).start()
    try:
        yield host
    finally:
        host.stop()
