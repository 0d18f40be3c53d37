"""In-process wakeups: a writer in this process wakes the readers of a topic at once.

Two users: stream readers (hosting.streams: a writer appended events) and callers waiting for a
run (`hosting.client.wait_for_run`: the entity finished an operation of their session). A writer
in the same process (a single-instance app, or the local host with one worker, runs entities and
HTTP in one worker process) wakes them at once; a writer in another process (another instance in
Azure, another worker group) is seen by polling: the SQLite stream store's one watcher per
process (which then notifies here, and looks only at runs whose session does not run here:
`session_running`), and waiting callers' own reads. Safe from any thread and any
event loop.

For sessions it also counts the entity operations running in this process (`session_running`):
a caller whose session has an operation running here knows the end of it will wake it, and
need not poll meanwhile; `start_waiter` wakes such a caller when an operation starts here, so it
can stop polling for a turn that was queued when it began waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_waiting: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
_starts: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
_running: Counter[str] = Counter()
_ran_any = False  # whether any entity operation ran in this process (not on an HTTP-only instance)


@contextmanager
def _subscribed(
    table: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]],
    topic: str,
    event: asyncio.Event | None,
) -> Iterator[asyncio.Event]:
    entry = (asyncio.get_running_loop(), asyncio.Event() if event is None else event)
    with _lock:
        table.setdefault(topic, set()).add(entry)
    try:
        yield entry[1]
    finally:
        with _lock:
            waiting = table.get(topic)
            if waiting is not None:
                waiting.discard(entry)
                if not waiting:
                    del table[topic]


def waiter(
    topic: str, event: asyncio.Event | None = None
) -> contextlib.AbstractContextManager[asyncio.Event]:
    """An event set when `notify(topic)` is called, for the running loop's task to wait on
    (`event`: one the task already waits on for other news, so one wait hears them all)."""
    return _subscribed(_waiting, topic, event)


def start_waiter(
    topic: str, event: asyncio.Event | None = None
) -> contextlib.AbstractContextManager[asyncio.Event]:
    """An event set when an entity operation of the session `topic` starts in this process."""
    return _subscribed(_starts, topic, event)


def _wake(table: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]], topic: str) -> None:
    with _lock:
        entries = list(table.get(topic, ()))
    for loop, event in entries:
        # A closed loop's reader is not waiting any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(event.set)


def notify(topic: str) -> None:
    """Wake every reader waiting on `topic` (from any thread)."""
    _wake(_waiting, topic)


def session_topic(entity_name: str, key: str) -> str:
    """The topic of one entity instance (an agent's session): `dafx-{agent}@{session}`."""
    return f"entity:{entity_name.lower()}@{key}"


@contextmanager
def session_operation(entity_name: str, key: str) -> Iterator[None]:
    """Mark an entity operation of this session as running in this process for the `with`
    block, and wake the session's waiters when it ends (its state is committed right after the
    batch, so they re-read it at once)."""
    global _ran_any
    topic = session_topic(entity_name, key)
    with _lock:
        _running[topic] += 1
        _ran_any = True
    _wake(_starts, topic)
    try:
        yield
    finally:
        with _lock:
            _running[topic] -= 1
            if _running[topic] <= 0:
                del _running[topic]
        notify(topic)


def runs_operations() -> bool:
    """Whether this process has run any entity operation: one that never has (the HTTP group of
    the flex topology, an HTTP instance on Flex Consumption) need not wait for one to start."""
    return _ran_any


def session_running(topic: str) -> bool:
    """Whether an entity operation of the session `topic` is running in this process now."""
    with _lock:
        return topic in _running


async def session_quiet(topic: str, quiet: float) -> None:
    """Return once no entity operation of the session `topic` has run in this process for
    `quiet` seconds (at once if `quiet` is 0 and none runs, or if this process never ran an
    operation at all): from then on, news of the session would come from another process."""
    if not _ran_any:
        return
    loop = asyncio.get_running_loop()
    news = asyncio.Event()
    with start_waiter(topic, news), waiter(topic, news):
        until = loop.time() + quiet
        while True:
            news.clear()
            if session_running(topic):
                await news.wait()  # its end (whatever else comes first, it is looked at again)
                until = loop.time() + quiet
                continue
            left = until - loop.time()
            if left <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(news.wait(), left)
            if news.is_set():
                until = loop.time() + quiet  # an operation started or ended here meanwhile
