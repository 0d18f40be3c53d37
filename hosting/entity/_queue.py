"""The runs of a session beyond the turn in progress: a stepped run started, queued, refused,
steered into the running turn or interrupting it (docs/hosting.md "Runs sent to a busy
session"), and the `cancel` operation, which ends a queued run or a turn between its steps."""

from __future__ import annotations

import logging
from dataclasses import replace

from agents import TurnProgress, TurnRequest, TurnResult, failure, now_iso
from state import dump_state

from .._errors import InvalidOperation, ProblemCode, RunConflict
from ..stored import ActiveTurn, Steer, StoredDocument, UnreadableTurn, active_turn, queued_requests
from ._context import EntityContext, Loaded, cache_load, load, operation_input, store_text
from ._records import busy, cancelled, over_limit, record_failure
from ._services import EntityServices
from ._steps import step
from ._wire import RunAnswer, Steered, TurnResultJson, correlation_input, pending, steered, turn_json

log = logging.getLogger("hosting.entity")


def submit(
    services: EntityServices, context: EntityContext, loaded: Loaded, request: TurnRequest, strategy: str
) -> RunAnswer:
    """Start the turn of `request`, or, when the session is busy, do what `strategy` says:
    queue it behind the turn in progress (`enqueue`), record it as refused `session_busy`
    (`reject`), steer its messages into the running turn (`steer`), or cancel the turn in
    progress and the queued runs, then start it (`interrupt`)."""
    state = loaded.state
    try:
        current = active_turn(state)
        queued = queued_requests(state)
    except UnreadableTurn as error:
        bug = failure(ProblemCode.INTERNAL_ERROR, str(error))
        return record_failure(services, context, loaded, request, bug)
    cid = request.correlation_id
    joined = StoredDocument.of_state(state).steered_into(cid) if strategy == "steer" else None
    if joined is not None and joined != cid:
        return steered(cid, joined)  # sent again after it joined a turn: never runs on its own
    if current is None and not queued:
        return step(services, context, loaded, ActiveTurn(request, TurnProgress(), now_iso()))
    running = [current.request] if current is not None else []
    waiting = [t for t in [*running, *queued] if t.correlation_id == cid]
    if waiting:
        if services.agent.request_identity(waiting[0]) != services.agent.request_identity(request):
            raise RunConflict(cid)
        return pending(cid)  # a redelivered signal: it waits already
    if strategy == "reject":
        result = record_failure(services, context, loaded, request, busy(len(running) + len(queued)))
        # Its stream ends too: a caller following it is answered run.failed session_busy.
        services.events(context, cid).close(dict(result))
        return result
    if strategy == "interrupt":
        return _interrupt(services, context, request)
    if strategy == "steer" and current is not None:
        return _steer(services, context, loaded, current, request)
    refused = over_limit(services, loaded, request)
    if refused is not None:
        return record_failure(services, context, loaded, request, refused)
    state.queued_runs = [*state.queued_runs, request.to_json()]
    text = dump_state(state)
    store_text(context, text)
    cache_load(context, Loaded(text, state))
    return pending(cid)


def _steer(
    services: EntityServices,
    context: EntityContext,
    loaded: Loaded,
    current: ActiveTurn,
    request: TurnRequest,
) -> Steered | TurnResultJson:
    """Store the messages of `request` in the turn in progress, for its next model step; its
    answer is the running run's."""
    refused = over_limit(services, loaded, request)
    if refused is not None:
        return record_failure(services, context, loaded, request, refused)
    state = loaded.state
    joined = replace(current, steered=[*current.steered, Steer.of(request, now_iso())])
    state.active_turn = joined.to_json()
    text = dump_state(state)
    store_text(context, text)
    cache_load(context, Loaded(text, state))
    return steered(request.correlation_id, current.correlation_id)


def _interrupt(services: EntityServices, context: EntityContext, request: TurnRequest) -> RunAnswer:
    """Cancel every run the session holds (the queued ones first, so that no cancel starts
    the next of them), as the `cancel` operation does, then start the turn of `request`."""
    while True:
        loaded = load(context)
        current = active_turn(loaded.state)
        queued = queued_requests(loaded.state)
        if queued:
            victim, progress = queued[-1], None
        elif current is not None:
            victim, progress = current.request, current.progress
        else:
            break
        result = record_failure(services, context, loaded, victim, cancelled(), progress)
        services.events(context, victim.correlation_id).close(dict(result))
    return step(services, context, loaded, ActiveTurn(request, TurnProgress(), now_iso()))


def cancel(services: EntityServices, context: EntityContext) -> TurnResultJson | None:
    """The `cancel` operation: the run named by its input ends `run_cancelled` if it is queued
    or between two steps (its finished steps are kept in its record); a finished run is
    answered with its result, unchanged; an unknown one with None."""
    cid = correlation_input(operation_input(context))
    if cid is None:
        raise InvalidOperation(f"invalid input for {services.name} cancel: expected {{'correlationId': str}}")
    loaded = load(context)
    recorded = TurnResult.from_state(loaded.state, cid)
    if recorded is not None:
        return turn_json(recorded)  # it finished first: a cancel changes nothing
    try:
        current = active_turn(loaded.state)
        queued = [q for q in queued_requests(loaded.state) if q.correlation_id == cid]
    except UnreadableTurn:
        log.exception("entity %s@%s: the turn in progress cannot be read", services.name, context.entity_key)
        return None
    if current is not None and current.correlation_id == cid:
        request, progress = current.request, current.progress
    elif queued:
        request, progress = queued[0], None
    else:
        return None
    result = record_failure(services, context, loaded, request, cancelled(), progress)
    services.events(context, cid).close(dict(result))
    return result
