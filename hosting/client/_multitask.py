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
  run the stored state names: hosting.streams `Dispatch.interrupts`), where a step in flight looks
  for the mark (hosting.streams
  `RunEvents.stoppable`), so the model call it is waiting for is abandoned within a second rather
  than finished, even in a turn's first step, which the stored state does not show yet; the
  entity withdraws the session's mark when the run reaches it, cancels the runs it holds and
  starts the new run. See docs/hosting.md "Runs sent to a busy session".

`admit_run` is the one call the submit path makes here: the check, then the run's claim and send
(hosting.streams `start_run`) with what an `interrupt` marks, so the walk of a turn passes
through this module once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..streams import (
    Admission,
    Dispatch,
    RunClaim,
    StreamKey,
    StreamStore,
    claimed_user,
    latest_run,
    start_run,
)
from ._outcome import Busy, Hidden
from ._read import Snapshot

BUSY_STRATEGIES = ("reject", "interrupt")


def _others(correlation_id: str, snapshot: Snapshot) -> list[str]:
    stored = snapshot.stored.waiting_ids() if snapshot.exists else []
    return [cid for cid in stored if cid != correlation_id]


async def admit_run(
    store: StreamStore | None,
    key: StreamKey,
    claim: RunClaim,
    *,
    user_id: str | None,
    strategy: str,
    snapshot: Snapshot,
    same_request: Callable[[str | None, None], bool],
    dispatch: Dispatch,
    streamed: bool,
) -> Busy | Hidden | Admission:
    """The run refused (see the module: `busy`, `hidden`), or what its claim did (hosting.streams
    `start_run`; an `interrupt` run sent with the marks it sets)."""
    refused = await _busy_session(store, key, user_id, strategy, snapshot)
    if refused is not None:
        return refused
    if strategy == "interrupt":
        dispatch = replace(dispatch, interrupts=_interrupts(key, snapshot))
    return await start_run(
        store, key, claim, user_id=user_id, same_request=same_request, dispatch=dispatch, streamed=streamed
    )


def _interrupts(key: StreamKey, snapshot: Snapshot) -> tuple[StreamKey, ...]:
    """What an `interrupt` run marks, just before it is sent (never for a run that is not sent: a
    retry, a refusal): the session's interrupt mark, which stops a step in flight that the stored
    state does not show yet (a turn's first step is stored when it ends) and which the entity
    withdraws when this run reaches the session, and each run the stored state names."""
    others = [StreamKey(key.agent, key.session_id, cid) for cid in _others(key.correlation_id, snapshot)]
    return (StreamKey.interrupt(key.agent, key.session_id), *others)


async def _busy_session(
    store: StreamStore | None,
    key: StreamKey,
    user_id: str | None,
    strategy: str,
    snapshot: Snapshot,
) -> Busy | Hidden | None:
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
                return Hidden()
            # A stored session's own runs only: another user's run sent to it was refused by the
            # entity, its claim left behind.
            own = not snapshot.exists or snapshot.stored.visible_to(owner)
            if own and not (snapshot.exists and _finished(snapshot, running.correlation_id)):
                others = [running.correlation_id]
    if others and strategy == "reject":
        return Busy(len(others))
    return None


def _finished(snapshot: Snapshot, correlation_id: str) -> bool:
    """Whether the read state has the run's answer (its claim outlives it)."""
    stored = snapshot.stored
    return stored.find_run(correlation_id) is not None or stored.is_archived_run(correlation_id)


