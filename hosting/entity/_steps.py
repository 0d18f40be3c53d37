"""The steps of a turn, as operations of the agent's entity (docs/hosting.md "Durable turns").

A turn of steps starts with its first step, run by the `run` operation (hosting.entity._turns,
through hosting.entity._queue); each step records its outcome in the session document
(`data.activeTurn`, hosting.stored) and signals the entity the `step` operation for the next
one. The last step records the turn as a turn run in one piece is recorded, and starts the next
queued run. A step that needs decisions pauses the turn instead (hosting.entity._approvals).
"""

from __future__ import annotations

import logging

from agents import AwaitingApproval, FullHistory, TurnProgress, TurnRequest, now_iso
from state import AgentState, TurnFailure, dump_state, load_state

from .._loop import DeadlinePassed, run_sync
from ..archive import SessionHistory
from ..stored import ActiveTurn, UnreadableTurn, active_turn, keep_approvals, queued_requests
from ..streams import RunCancelled, RunEvents
from ._approvals import pause
from ._context import EntityContext, Loaded, cache_load, load, operation_input, store_text
from ._deadline import StepTime, step_time, timeout_failure
from ._records import cancelled, over_limit, record_bug, record_failure, start_next, too_large
from ._services import EntityServices
from ._signals import send_signal
from ._wire import RunAnswer, Running, StepSignal, TurnResultJson, running, step_input, turn_json

log = logging.getLogger("hosting.entity")


def due_step(services: EntityServices, context: EntityContext) -> tuple[Loaded, ActiveTurn] | None:
    """The turn whose step the `step` operation's input names, if that step is still the next
    one (a stale signal, after a reset or a step already run, names none); the first queued run
    becomes the turn in progress when its first step is due."""
    value = step_input(operation_input(context), True, services.name)
    cid, step = value["correlationId"], value["step"]
    loaded = load(context)
    state = loaded.state
    try:
        current = active_turn(state)
        queued = queued_requests(state) if current is None else []
    except UnreadableTurn:
        log.exception("entity %s@%s: the turn in progress cannot be read", services.name, context.entity_key)
        return None
    if current is None:
        if not queued or queued[0].correlation_id != cid or step != 0:
            return None
        state.queued_runs = state.queued_runs[1:]
        current = ActiveTurn(queued[0], TurnProgress(), now_iso())
    elif current.correlation_id != cid or current.progress.steps != step:
        return None
    elif current.waiting:
        return None  # paused for decisions: the last of them signals the step (entity._approvals)
    return loaded, current


def fail_step(services: EntityServices, context: EntityContext, error: TurnFailure) -> TurnResultJson | None:
    """Answer the `step` operation in `context` without running it: its turn is recorded as a
    failed turn with `error` (hosting.entity._batch), so its caller is answered."""
    named = step_input(operation_input(context), False, services.name)["correlationId"]
    loaded = load(context)
    try:
        current = active_turn(loaded.state)
    except UnreadableTurn:
        return None
    if current is None or named != current.correlation_id:
        return None
    return record_failure(services, context, loaded, current.request, error)


def step(services: EntityServices, context: EntityContext, loaded: Loaded, turn: ActiveTurn) -> RunAnswer:
    """Run the next step of `turn`, record it, and signal the one after it."""
    request = turn.request
    time = step_time(services.limits, turn.started_at)
    if time.seconds <= 0 and time.deferrable:
        return _defer(services, context, loaded, turn)  # this batch's time is spent, not the turn's
    events = services.events(context, request.correlation_id)
    try:
        events.begin_step(turn.progress.steps, turn.stream_seq)
        if time.seconds <= 0:
            return _timed_out(services, context, loaded, request, events, time)
        return _run_step(services, context, loaded, turn, events, time)
    except Exception as error:
        return record_bug(services, context, loaded, request, events, error)


def _defer(services: EntityServices, context: EntityContext, loaded: Loaded, turn: ActiveTurn) -> Running:
    """Run the step of `turn` again in a later batch: its own batch's budget ends before the
    step could finish (hosting.entity._deadline). Nothing of the attempt is stored; a turn
    not stored yet (its first step, run by the `run` operation itself) is stored as the turn
    in progress, so that the signal finds it."""
    cid, step = turn.correlation_id, turn.progress.steps
    # A fresh parse: the attempt may have changed the live object.
    state = load_state(loaded.text) if loaded.text else AgentState.new()
    if not _waiting(state, cid):
        state.active_turn = turn.to_json()
        state.last_activity_at = now_iso()
        text = dump_state(state)
        store_text(context, text)
        cache_load(context, Loaded(text, state))
    else:
        cache_load(context, None)
    key = context.entity_key
    log.info("entity %s@%s run %s: step %d moved to the next batch", services.name, key, cid, step)
    again: StepSignal = {"correlationId": cid, "step": step}
    send_signal(services.name, str(context.entity_key), "step", again)
    return running(cid, step)


def _timed_out(
    services: EntityServices,
    context: EntityContext,
    loaded: Loaded,
    request: TurnRequest,
    events: RunEvents,
    time: StepTime,
) -> TurnResultJson:
    """Record the turn as failed `timeout`: its deadline passed (counted from its start), or
    one step took longer than a whole batch's budget."""
    error = timeout_failure(services.limits, time.seconds, time.batch_bound)
    result = record_failure(services, context, loaded, request, error)
    events.finish(dict(result))
    return result


def _run_step(
    services: EntityServices,
    context: EntityContext,
    loaded: Loaded,
    turn: ActiveTurn,
    events: RunEvents,
    time: StepTime,
) -> RunAnswer:
    request = turn.request
    # Runs steered into the turn join it here when this step is a model call.
    turn = turn.with_steered_applied()
    refused = over_limit(services, loaded, request) if turn.progress.steps == 0 else None
    if refused is not None:
        # The turn stores at least the asked text: refuse it before paying for a model call.
        return record_failure(services, context, loaded, request, refused)
    state = loaded.state
    cache_load(context, None)  # the step mutates the object; only a saved one is reused
    older = None
    if isinstance(services.agent.context, FullHistory):
        older = SessionHistory(services.archive, services.name, context.entity_key, state)
    try:
        outcome = run_sync(
            lambda: events.stoppable(
                events.streaming(
                    lambda sink: services.agent.run_step(
                        state, request, turn.progress, older, on_event=sink,
                        session_id=str(context.entity_key), decisions=turn.decisions,
                    )
                )
            ),
            time.seconds,
        )
    except RunCancelled:
        # Cancelled while the step ran: its work is abandoned, the finished steps are kept.
        result = record_failure(services, context, loaded, request, cancelled(), turn.progress)
        events.finish(dict(result))
        return result
    except DeadlinePassed:
        # Nothing of the attempt is stored: the step runs again in a new batch, or the turn
        # is recorded as failed on the state as it was before the step.
        if time.deferrable:
            return _defer(services, context, loaded, turn)
        return _timed_out(services, context, loaded, request, events, time)
    if isinstance(outcome, AwaitingApproval):
        return pause(services, context, loaded, turn, outcome, events)  # no next step until decided
    state.last_activity_at = now_iso()  # a turn in progress is activity: never idle-expired
    if isinstance(outcome, TurnProgress):
        # The approvals stay with the turn until it ends: a decision sent again is recognised.
        going_on = ActiveTurn(request, outcome, turn.started_at, events.seq, turn.approvals, turn.steered)
        state.active_turn = going_on.to_json()
    else:
        state.active_turn = None
        # The decisions and their reasons stay with the finished run, on its response entry.
        keep_approvals(state, request.correlation_id, [a.to_json() for a in turn.approvals])
        # Older entries move to chunks, stored before this state (which references them).
        services.archive.settle(services.name, context.entity_key, state)
    text = dump_state(state)
    size = len(text.encode("utf-8"))
    if size > services.max_session_bytes:
        return record_failure(services, context, loaded, request, too_large(services, size))
    store_text(context, text)
    cache_load(context, Loaded(text, state))
    cid = request.correlation_id
    if isinstance(outcome, TurnProgress):
        after: StepSignal = {"correlationId": cid, "step": outcome.steps}
        send_signal(services.name, str(context.entity_key), "step", after)
        return running(cid, outcome.steps)
    result = turn_json(outcome)
    events.finish(dict(result))
    start_next(services, context, state)
    log.info("entity %s@%s run %s: %s", services.name, context.entity_key, cid, outcome.status)
    return result


def _waiting(state: AgentState, correlation_id: str) -> bool:
    """The stored state names the run as its turn in progress, or as the next queued run."""
    try:
        current = active_turn(state)
        queued = queued_requests(state) if current is None else []
    except UnreadableTurn:
        return False
    if current is not None:
        return current.correlation_id == correlation_id
    return bool(queued) and queued[0].correlation_id == correlation_id
