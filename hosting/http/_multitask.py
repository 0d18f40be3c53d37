"""A run sent to a busy session: what the HTTP edge does before the entity decides.

The entity is the one place that knows for sure whether its session is busy (hosting.entity._steps
`_submit`); the edge has the session as it just read it, which is enough for two things:

* `reject`: a session whose stored state names a run in progress or queued answers 409
  `session_busy` at once, sending nothing (the entity would refuse it anyway);
* `interrupt`: each run the stored state names is marked cancelled in the stream store first, where
  a step in flight looks for it (hosting.streams `RunEvents.stoppable`), so the model call it is
  waiting for is abandoned within a second rather than finished; the entity then cancels them
  between steps and starts the new run. See docs/hosting.md "Runs sent to a busy session".
"""

from __future__ import annotations

import logging

from .._errors import ProblemCode, ProblemError
from ..client._read import Snapshot
from ..streams import StreamKey, StreamStore
from ._requests import RunCall

log = logging.getLogger("hosting.http")


async def busy_session(store: StreamStore, call: RunCall, snapshot: Snapshot) -> None:
    """Refuse a `reject` run to a session the read state shows busy; mark the runs an `interrupt`
    run will cancel. Nothing for `enqueue`."""
    if call.multitask_strategy == "enqueue" or not snapshot.exists:
        return
    others = [cid for cid in snapshot.stored.waiting_ids() if cid != call.correlation_id]
    if not others:
        return
    if call.multitask_strategy == "reject":
        raise ProblemError(
            ProblemCode.SESSION_BUSY,
            f"session {call.session_id!r} has {len(others)} run(s) running or queued and this run asked "
            "multitask_strategy 'reject'; send it again once they finish, or with 'enqueue' or 'interrupt'",
            field="multitask_strategy",
        )
    for cid in others:
        key = StreamKey(call.agent, call.session_id, cid)
        try:
            await store.request_cancel(key)
        except Exception:
            # The entity cancels them between steps whatever happens here.
            log.warning(
                "run %s: the interrupt could not be marked in the stream store", key.text(), exc_info=True
            )
