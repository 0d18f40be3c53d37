"""Running the async agent from the SDK's synchronous entity handler.

The Python SDK's entity handler is synchronous, so each batch runs on a thread (hosting's own,
`hosting.entity._batch.batch_threads`, not the worker's pool). Every turn's async work runs on
one event loop that lives in its own daemon thread for the life of the process; the calling
thread only waits for the result. So the turns of all sessions share one model client per
endpoint (created once, on that loop, and reused: no per-thread client, TLS context or connection
pool to build while other turns wait), and a turn waiting on a slow model costs a blocked thread
and an idle coroutine, not CPU (docs/hosting.md "Concurrency").
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

from agents import close_model_clients

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


TOOL_THREADS = 256
"""Threads for the sync work turns hand off (sync tools, credential providers: `asyncio.to_thread`):
as many as turns may run at once, so one turn's slow sync tool never queues another's."""


def _serve(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
    asyncio.set_event_loop(loop)
    loop.set_default_executor(
        concurrent.futures.ThreadPoolExecutor(TOOL_THREADS, thread_name_prefix="hosting-tools")
    )
    loop.call_soon(ready.set)
    loop.run_forever()


def turn_loop() -> asyncio.AbstractEventLoop:
    """The process's loop for turns, started on first use (and again if its thread ended)."""
    global _loop, _thread
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive() or _loop.is_closed():
            loop = asyncio.new_event_loop()
            ready = threading.Event()
            thread = threading.Thread(target=_serve, args=(loop, ready), name="hosting-turns", daemon=True)
            thread.start()
            ready.wait()
            _loop, _thread = loop, thread
        return _loop


def _close_clients_at_exit() -> None:
    # The model clients' aiohttp sessions would otherwise be collected unclosed at interpreter
    # exit and each log "Unclosed client session". atexit runs while the daemon thread still does.
    loop, thread = _loop, _thread
    if loop is None or thread is None or not thread.is_alive() or loop.is_closed():
        return
    # Exiting anyway: a client that cannot close in time is left to the OS.
    with contextlib.suppress(Exception):
        asyncio.run_coroutine_threadsafe(close_model_clients(), loop).result(timeout=2)


atexit.register(_close_clients_at_exit)


CANCEL_GRACE_SECONDS = 0.5
"""How long past its deadline the calling thread waits for a cancelled awaitable to end."""


class DeadlinePassed(Exception):
    """`run_sync`'s awaitable did not finish within its deadline (it was cancelled)."""


def run_sync(factory: Callable[[], Awaitable[T]], deadline: float | None = None) -> T:
    """Run the awaitable `factory()` makes on the turn loop and wait for its result here.

    With `deadline` (seconds), the awaitable is cancelled when it has not finished by then, and
    `DeadlinePassed` raised; the calling thread never waits much longer, even for an awaitable
    that does not end when cancelled. Called from any thread but the turn loop's own (an entity
    function never runs there).
    """
    loop = turn_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        raise RuntimeError("run_sync cannot wait on the turn loop from the turn loop itself")

    async def main() -> T:
        if deadline is None:
            return await factory()
        scope = asyncio.timeout(deadline)
        try:
            async with scope:
                return await factory()
        except TimeoutError:
            if scope.expired():
                raise DeadlinePassed(f"not finished within {deadline:.1f} s") from None
            raise

    future = asyncio.run_coroutine_threadsafe(main(), loop)
    if deadline is None:
        return future.result()
    try:
        return future.result(max(deadline, 0) + CANCEL_GRACE_SECONDS)
    except concurrent.futures.TimeoutError:
        if future.done():
            raise  # the awaitable's own TimeoutError
        future.cancel()  # an awaitable that ignored its cancellation: stop waiting for it here
        raise DeadlinePassed(f"not finished within {deadline:.1f} s") from None
