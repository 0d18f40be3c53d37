"""Running the async agent from the SDK's synchronous entity functions.

The Python worker calls entity functions on a thread pool. Each worker thread gets one event loop
of its own that lives as long as the thread, so async clients created while a turn runs stay on
the loop that created them and are reused by later turns on that thread, never shared across
loops.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

_local = threading.local()
_helper_lock = threading.Lock()
_helper: concurrent.futures.ThreadPoolExecutor | None = None


def _thread_loop() -> asyncio.AbstractEventLoop:
    loop: asyncio.AbstractEventLoop | None = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        _local.loop = loop
    return loop


def _run_here(factory: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await factory()

    return _thread_loop().run_until_complete(main())


def run_sync(factory: Callable[[], Awaitable[T]]) -> T:
    """Run the awaitable `factory()` makes to completion on this thread's own event loop.

    Called from a thread that is already running a loop (a host that invokes entity functions
    inline from async code), the work moves to a helper thread with its own loop instead, since
    a loop cannot be re-entered.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_here(factory)
    global _helper
    with _helper_lock:
        if _helper is None:
            _helper = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="hosting-entity")
        helper = _helper
    return helper.submit(_run_here, factory).result()
