"""A run sent to a busy session: what the HTTP edge does before the entity decides.

The entity is the one place that knows for sure whether its session is busy (hosting.entity._steps
`_submit`); the edge has the session as it just read it, which is enough for two things:

* `reject`: a session whose stored state names a run in progress or queued answers 409
  `session_busy` at once, sending nothing (the entity would refuse it anyway); so does one whose
  latest claimed run in the stream store is in flight (hosting.streams `latest_run`): a turn's
  first step, which the stored state does not show until it ends (for an agent without tools,
  the whole turn);
* both: a session not stored yet whose run in flight another user's claim names answers 404, as
  their session does once stored, sending and marking nothing;
* `interrupt`: just before the run is sent, the session is marked in the stream store (and each
  run the stored state names), where a step in flight looks for the mark (hosting.streams
  `RunEvents.stoppable`), so the model call it is waiting for is abandoned within a second rather
  than finished, even in a turn's first step, which the stored state does not show yet; the
  entity withdraws the session's mark when the run reaches it, cancels the runs it holds and
  starts the new run. See docs/hosting.md "Runs sent to a busy session".
"""

from __future__ import annotations

import logging

from .._errors import ProblemCode, ProblemError, session_busy_message
from ..client import Snapshot
from ..streams import StreamKey, StreamStore, latest_run
from ._refusals import no_session
from ._requests import RunCall
from ._users import claimed_user

log = logging.getLogger("hosting.http")


def _others(call: RunCall, snapshot: Snapshot) -> list[str]:
    stored = snapshot.stored.waiting_ids() if snapshot.exists else []
    return [cid for cid in stored if cid != call.correlation_id]


async def busy_session(store: StreamStore, call: RunCall, snapshot: Snapshot) -> None:
    """Refuse a `reject` run to a session the read state, or the run in flight, shows busy, and
    a `reject` or `interrupt` run to a session another user's first turn is creating."""
    if call.multitask_strategy not in ("reject", "interrupt") or call.fresh_session:
        return
    others = _others(call, snapshot)
    if not others:
        flying = await latest_run(store, call.agent, call.session_id)
        if flying is not None and flying[0].correlation_id != call.correlation_id:
            key, claim = flying
            owner = claimed_user(claim.request_hash)[1]
            if not snapshot.exists and owner not in (None, call.user_id):
                raise no_session(call.agent, call.session_id)
            # A stored session's own runs only: another user's run sent to it was refused by the
            # entity, its claim left behind.
            own = not snapshot.exists or snapshot.stored.visible_to(owner)
            if own and not (snapshot.exists and _finished(snapshot, key.correlation_id)):
                others = [key.correlation_id]
    if others and call.multitask_strategy == "reject":
        raise ProblemError(
            ProblemCode.SESSION_BUSY,
            session_busy_message(len(others), call.session_id),
            field="multitask_strategy",
        )


def _finished(snapshot: Snapshot, correlation_id: str) -> bool:
    """Whether the read state has the run's answer (its claim outlives it)."""
    stored = snapshot.stored
    return stored.find_run(correlation_id) is not None or stored.is_archived_run(correlation_id)


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
