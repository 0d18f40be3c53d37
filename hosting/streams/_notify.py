"""Wake readers in this process as soon as a writer in this process appends (any thread, any loop).

Readers also poll, so a writer in another process is seen within the poll interval; a writer in
the same process (the local host runs entities and HTTP in one process) wakes them at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_waiting: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}


@contextmanager
def waiter(topic: str) -> Iterator[asyncio.Event]:
    """An event set when `notify(topic)` is called, for the running loop's task to wait on."""
    entry = (asyncio.get_running_loop(), asyncio.Event())
    with _lock:
        _waiting.setdefault(topic, set()).add(entry)
    try:
        yield entry[1]
    finally:
        with _lock:
            waiting = _waiting.get(topic)
            if waiting is not None:
                waiting.discard(entry)
                if not waiting:
                    del _waiting[topic]


def notify(topic: str) -> None:
    """Wake every reader waiting on `topic` (from any thread)."""
    with _lock:
        entries = list(_waiting.get(topic, ()))
    for loop, event in entries:
        # A closed loop's reader is not waiting any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(event.set)
