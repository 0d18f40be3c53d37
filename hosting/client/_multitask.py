"""A run sent to a busy session: what the submit path does before the entity decides.

The entity is the one place that knows for sure whether its session is busy (hosting.entity._queue
`submit`); the submit path has the session as it just read it, which is enough for two things:

* `reject`: a session whose stored state names a run in progress or queued is refused at once
  (409 `session_busy` at the HTTP edge), sending nothing (the entity would refuse it anyway); so
  is one whose latest claimed run in the stream store is in flight (hosting.streams
  `latest_run`): a turn's first step, which the stored state does not show until it ends (for an
  agent without tools, the whole turn);
* both: a session not stored yet whose run in flight another user's claim names is hidden (404
  at the HTTP edge), as their session is once stored, sending and marking nothing;
* `interrupt`: just before the run is sent, the session is marked in the stream store (and each
  run the stored state names), where a step in flight looks for the mark (hosting.streams
  `RunEvents.stoppable`), so the model call it is waiting for is abandoned within a second rather
  than finished, even in a turn's first step, which the stored state does not show yet; the
  entity withdraws the session's mark when the run reaches it, cancels the runs it holds and
  starts the new run. See docs/hosting.md "Runs sent to a busy session".
"""

from __future__ import annotations

import logging

from ..streams import StreamKey, StreamStore, claimed_user, latest_run
from ._outcome import RunOutcome
from ._read import Snapshot

log = logging.getLogger("hosting.client")

BUSY_STRATEGIES = ("reject", "interrupt")


def _others(correlation_id: str, snapshot: Snapshot) -> list[str]:
    stored = snapshot.stored.waiting_ids() if snapshot.exists else []
    return [cid for cid in stored if cid != correlation_id]


async def busy_session(
    store: StreamStore | None,
    key: StreamKey,
    user_id: str | None,
    strategy: str,
    snapshot: Snapshot,
) -> RunOutcome | None:
    """The refusal of a `reject` run to a session the read state, or the run in flight, shows
    busy (`busy`), and of a `reject` or `interrupt` run to a session another user's first turn is
    creating (`hidden`); None when the run may be sent."""
    if strategy not in BUSY_STRATEGIES:
        return None
    others = _others(key.correlation_id, snapshot)
    if not others and store is not None:
        flying = await latest_run(store, key.agent, key.session_id)
        if flying is not None and flying[0].correlation_id != key.correlation_id:
            running, claim = flying
            owner = claimed_user(claim.request_hash)[1]
            if not snapshot.exists and owner not in (None, user_id):
                return RunOutcome(hidden=True)
            # A stored session's own runs only: another user's run sent to it was refused by the
            # entity, its claim left behind.
            own = not snapshot.exists or snapshot.stored.visible_to(owner)
            if own and not (snapshot.exists and _finished(snapshot, running.correlation_id)):
                others = [running.correlation_id]
    if others and strategy == "reject":
        return RunOutcome(busy=len(others))
    return None


def _finished(snapshot: Snapshot, correlation_id: str) -> bool:
    """Whether the read state has the run's answer (its claim outlives it)."""
    stored = snapshot.stored
    return stored.find_run(correlation_id) is not None or stored.is_archived_run(correlation_id)


async def mark_interrupt(
    store: StreamStore | None, key: StreamKey, strategy: str, snapshot: Snapshot
) -> None:
    """Mark what an `interrupt` run cancels, just before it is sent (never for a run that is not
    sent: a retry, a refusal): the session's interrupt mark, which stops a step in flight that the
    stored state does not show yet (a turn's first step is stored when it ends) and which the
    entity withdraws when this run reaches the session, and each run the stored state names."""
    if strategy != "interrupt" or store is None:
        return
    keys = [StreamKey.interrupt(key.agent, key.session_id)]
    keys += [StreamKey(key.agent, key.session_id, cid) for cid in _others(key.correlation_id, snapshot)]
    for marked in keys:
        try:
            await store.request_cancel(marked)
        except Exception:
            # The entity cancels them between steps whatever happens here.
            log.warning(
                "run %s: the interrupt could not be marked in the stream store", marked.text(), exc_info=True
            )
