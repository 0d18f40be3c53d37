"""Starting a run exactly once, for the JSON and the SSE paths alike: a claim per run in the store.

The HTTP side has read the session and answered what the stored state settles (an unreadable
state, a finished run, a discarded one, a full session). What remains is a run that is not stored:
new, or still pending. The first request for it records a `RunClaim` (its request identity and
whether it streams live) atomically in the stream store, which every process and instance shares,
and sends the turn; a later request for the same run finds the claim and either attaches to the
pending run without sending a second turn (same request) or is refused at once with 409
`idempotency_conflict` (another request), as a stored run's retry would be.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from .._errors import ProblemError
from ._store import RunClaim, StreamKey, StreamStore

log = logging.getLogger("hosting.streams")


async def start_run(
    store: StreamStore | None,
    key: StreamKey,
    claim: RunClaim,
    *,
    same: Callable[[str | None], bool],
    conflict: Callable[[], ProblemError],
    send: Callable[[], Awaitable[None]],
) -> bool:
    """Send the run's turn unless a request for the same run is pending; True when it was sent.

    `same(request_hash)` says whether a pending run's identity is this request's; `conflict()` is
    the 409 raised when it is not. Without a store every request sends (the entity answers a
    repeated id from its state and runs a turn once)."""
    if store is None:
        await send()
        return True
    earlier = await store.claim(key, claim)
    if earlier is not None:
        last = await store.last(key)
        if last is None or not last.terminal:
            # Pending (queued or running): attach to it, never a second turn.
            if not same(earlier.request_hash):
                raise conflict()
            if claim.live and not earlier.live:
                # A stream asked for after a waiting JSON request: stream the model if the entity
                # has not begun the turn yet (it reads the claim when it does).
                await store.claim(key, RunClaim(earlier.request_hash, True), replace=True)
            return False
        # Closed, yet the caller found no stored run: its record is gone (the session was
        # deleted) or the host died between publishing the answer and storing it (then the
        # entity answers this second signal from its state). Either way: a new claim, sent.
        await store.claim(key, claim, replace=True)
    try:
        await send()
    except BaseException:
        # Not sent: a retry must be able to send it.
        try:
            await store.release(key)
        except Exception:
            log.exception("could not release the claim of run %s", key)
        raise
    return True
