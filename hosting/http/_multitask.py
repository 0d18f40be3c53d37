"""A run sent to a busy session: what the HTTP edge does before the entity decides.

The entity is the one place that knows for sure whether its session is busy (hosting.entity._steps
`_submit`); the edge has the session as it just read it, which is enough for two things:

* `reject`: a session whose stored state names a run in progress or queued answers 409
  `session_busy` at once, sending nothing (the entity would refuse it anyway);
* `interrupt`: just before the run is sent, the session is marked in the stream store (and each
  run the stored state names), where a step in flight looks for the mark (hosting.streams
  `RunEvents.stoppable`), so the model call it is waiting for is abandoned within a second rather
  than finished, even in a turn's first step, which the stored state does not show yet; the
  entity withdraws the session's mark when the run reaches it, cancels the runs it holds and
  starts the new run. See docs/hosting.md "Runs sent to a busy session".
"""

from __future__ import annotations

import logging

from .._errors import ProblemCode, ProblemError
from ..client._read import Snapshot
from ..streams import StreamKey, StreamStore
from ._requests import RunCall

log = logging.getLogger("hosting.http")


def _others(call: RunCall, snapshot: Snapshot) -> list[str]:
    stored = snapshot.stored.waiting_ids() if snapshot.exists else []
    return [cid for cid in stored if cid != call.correlation_id]


async def busy_session(call: RunCall, snapshot: Snapshot) -> None:
    """Refuse a `reject` run to a session the read state shows busy."""
    if call.multitask_strategy != "reject" or call.fresh_session:
        return
    others = _others(call, snapshot)
    if others:
        raise ProblemError(
            ProblemCode.SESSION_BUSY,
            f"session {call.session_id!r} has {len(others)} run(s) running or queued and this run asked "
            "multitask_strategy 'reject'; send it again once they finish, or with 'enqueue' or 'interrupt'",
            field="multitask_strategy",
        )


async def mark_interrupt(store: StreamStore, call: RunCall, snapshot: Snapshot) -> None:
    """Mark what an `interrupt` run cancels, just before it is sent (never for a run that is not
    sent: a retry, a refusal): the session's interrupt mark, which stops a step in flight that the
    stored state does not show yet (a turn's first step is stored when it ends) and which the
    entity withdraws when this run reaches the session, and each run the stored state names."""
    if call.multitask_strategy != "interrupt" or call.fresh_session:
        return
    keys = [StreamKey.interrupt(call.agent, call.session_id)]
    keys += [StreamKey(call.agent, call.session_id, cid) for cid in _others(call, snapshot)]
    for key in keys:
        try:
            await store.request_cancel(key)
        except Exception:
            # The entity cancels them between steps whatever happens here.
            log.warning(
                "run %s: the interrupt could not be marked in the stream store", key.text(), exc_info=True
            )
