"""Following a run's event stream only for its end: a waiting caller's wakeup across processes.

A caller waiting for a JSON answer learns the outcome by reading the session's entity state. When
the entity runs in this process its end wakes the caller; when it runs elsewhere (another worker
process, another instance: on Flex Consumption, Durable functions never share an instance with
HTTP ones) the caller would poll. The entity publishes the run's terminal event just before its
batch commits, so with a shared stream store the caller can wait for that event instead, and read
the state once it is there (plus a slow safety read).

The watch follows only for a run that runs elsewhere: while an operation of the run's session
runs in this process (and `LOCAL_QUIET` after one), the operation's end wakes the caller already
(hosting._wakeup), so the watch reads nothing; it begins once the session has been quiet here
that long (the stream is replayed from its start: nothing written meanwhile is missed). On one
worker group (a single instance) a turn starts in the caller's process within a millisecond or
two of being sent and the caller is answered before the watch ever reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator

from .._ids import entity_name
from .._wakeup import session_quiet, session_topic
from ._store import APPROVAL_REQUIRED, StreamKey, StreamStore

log = logging.getLogger("hosting.streams")

IDLE_SECONDS = 30.0
"""The follow's idle beat (ignored here: the caller's own safety reads cover a silent store)."""
LOCAL_QUIET = 0.01
"""Seconds without an operation of the run's session in this process before the watch follows
the stream, in a process that runs entity operations (one that never ran one, such as the flex
topology's HTTP group, follows at once)."""


@contextlib.contextmanager
def terminal_watch(store: StreamStore, key: StreamKey, ended: Callable[[], None]) -> Iterator[None]:
    """For the `with` block, follow the run's events and call `ended()` at its terminal event, or
    when following fails (the store is down or not shared: the caller polls again). Leaving the
    block first stops the watch without calling it."""

    async def watch() -> None:
        try:
            await session_quiet(session_topic(entity_name(key.agent), key.session_id), LOCAL_QUIET)
            async for event in store.follow(key, 0, IDLE_SECONDS):
                # A turn that pauses for approvals has an answer for its caller too (a 202).
                if event is not None and (event.terminal or event.type == APPROVAL_REQUIRED):
                    break
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.debug("run %s: following its events for the answer failed (%r); polling", key, error)
        ended()

    task = asyncio.get_running_loop().create_task(watch())
    try:
        yield
    finally:
        task.cancel()
