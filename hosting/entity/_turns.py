"""The `run` operation: a turn request checked against the session (its owner, a retried or
discarded run id), then run as a turn of steps (hosting.entity._queue), or, for an
orchestration's call to an agent whose tools need no approval, in one piece in this operation.

The stored entity state is exactly the text `state.dump_state` wrote. It is handed to the SDK as
raw JSON text, so what the Durable extension stores (and what dashboards read) is the state
document itself, and an operation that fails before saving leaves the stored bytes untouched.
"""

from __future__ import annotations

import logging

from agents import (
    FullHistory,
    InvalidTurnRequest,
    TurnRequest,
    TurnResult,
    failure,
    now_iso,
)
from state import AgentState, TurnFailure, dump_state, load_state

from .._errors import HostingError, InvalidOperation, ProblemCode, RunConflict
from .._ids import MULTITASK_STRATEGIES, STRATEGY_KEY, USER_KEY, id_problem
from .._loop import DeadlinePassed, run_sync
from ..archive import SessionHistory
from ..stored import StoredDocument, refused_result, revived_text, unrecorded_run
from ..streams import RunEvents
from ._archived import answer_archived
from ._context import EntityContext, Loaded, cache_load, load, operation_input, store_text
from ._deadline import run_deadline, timeout_failure
from ._queue import submit
from ._records import over_limit, record_bug, record_failure, too_large
from ._services import EntityServices
from ._wire import RunAnswer, TurnResultJson, turn_json

log = logging.getLogger("hosting.entity")


class RunDiscarded(HostingError):
    """A run id a reset discarded came again: the operation fails, nothing is run or stored."""


class NotOwner(HostingError):
    """A turn for another user's session: the operation fails, nothing is run or stored."""


def run_user(run_input: object) -> str | None:
    """The user a `run` operation acts for (`userId`, which hosting adds to the turn request's
    JSON), or None; `InvalidOperation` for anything but an acceptable user id."""
    user = run_input.get(USER_KEY) if isinstance(run_input, dict) else None
    if user is not None and (not isinstance(user, str) or id_problem(user) is not None):
        raise InvalidOperation(f"invalid {USER_KEY} in a run operation's input: {user!r}")
    return user


def run_strategy(run_input: object) -> str:
    """What a `run` operation asks when its session is busy (`multitaskStrategy`, which hosting
    adds to the turn request's JSON; absent: enqueue)."""
    strategy = run_input.get(STRATEGY_KEY, "enqueue") if isinstance(run_input, dict) else "enqueue"
    if strategy not in MULTITASK_STRATEGIES:
        raise InvalidOperation(f"invalid {STRATEGY_KEY} in a run operation's input: {strategy!r}")
    return str(strategy)


def owned_start(user: str) -> Loaded:
    """The empty history a session starts with when a user's turn creates it: owned by `user`
    (as stored text too, so a failed first turn's record keeps the owner)."""
    fresh = AgentState.new()
    fresh.user_id = user
    return Loaded(dump_state(fresh), fresh)


def run(services: EntityServices, context: EntityContext, unfinished: TurnFailure | None = None) -> RunAnswer:
    """The `run` operation in `context`; with `unfinished`, the run is not run but recorded as a
    failed turn with that error, unless it has an answer already (hosting.entity._batch, when
    the SDK failed the batch)."""
    run_input = operation_input(context)
    try:
        request = TurnRequest.from_json(run_input)
    except (InvalidTurnRequest, ValueError) as error:
        raise InvalidOperation(f"invalid input for {services.name} run: {error}") from error
    user = run_user(run_input)
    if run_strategy(run_input) == "interrupt":
        # The edge marked the session so that a step in flight stops (hosting.client._multitask);
        # from here on the mark would stop this run's own steps and the runs after it.
        services.events(context, request.correlation_id).withdraw_interrupt()
    loaded = load(context)
    if loaded.text and not StoredDocument.of_state(loaded.state).visible_to(user):
        # Another user's session (a turn that raced its creation past the caller's check):
        # nothing is run or stored, and its caller, who cannot see the session, learns nothing.
        raise NotOwner(f"{services.name}@{context.entity_key} belongs to another user; run not accepted")
    if not loaded.text and user is not None:
        loaded = owned_start(user)  # the turn that creates a session gives it its owner
    answer = _answered(services, loaded, request, context.entity_key)
    if answer is not None:
        return answer
    # The marks, read from the loaded state itself: the stored text is parsed once.
    marks = StoredDocument.of_state(loaded.state)
    unrecorded = unrecorded_run(marks, request.correlation_id) if loaded.text else None
    if unrecorded is not None and unrecorded.discarded:
        # A retry of a run a reset or delete discarded: never run again in the new history
        # (the HTTP side answers 410 run_discarded from the state).
        cid = request.correlation_id
        raise RunDiscarded(f"run {cid!r} was discarded by a reset or delete; not run again")
    if unrecorded is not None:
        return turn_json(refused_result(request.correlation_id))  # answered by its id alone
    if loaded.text and marks.is_tombstone:
        # A deleted session's tombstone: a new history starts, still remembering its ids (the
        # one operation that parses twice: the first turn after a delete).
        revived = revived_text(marks, user)
        loaded = Loaded(revived, load_state(revived))
    if unfinished is not None:
        return record_failure(services, context, loaded, request, unfinished)
    if request.orchestration_id is None or services.may_pause:
        # A turn of steps, each its own operation (docs/hosting.md "Durable turns"). An
        # orchestration's call awaits the operation's result, so its turn stays one operation,
        # unless a tool may need approval: then it is stepped too and can pause, and the
        # orchestration waits for its end (hosting._orchestration).
        return submit(services, context, loaded, request, run_strategy(run_input))
    return _whole_turn(services, context, loaded, request)


def _whole_turn(
    services: EntityServices, context: EntityContext, loaded: Loaded, request: TurnRequest
) -> TurnResultJson:
    """Run the turn of `request` in this operation, within its deadline, and publish its events."""
    events = services.events(context, request.correlation_id)
    deadline = run_deadline(services.limits)
    try:
        events.begin()
        if deadline <= 0:
            # The batch's time is spent: answered now (retryable), never left to the host's
            # timeout, whose all-failed commit would leave this run without a record.
            timed_out = timeout_failure(services.limits, deadline)
            result = record_failure(services, context, loaded, request, timed_out)
        else:
            result = _run_turn(services, context, loaded, request, events, deadline)
    except Exception as error:
        return record_bug(services, context, loaded, request, events, error)
    events.finish(dict(result))
    return result


def _run_turn(
    services: EntityServices,
    context: EntityContext,
    loaded: Loaded,
    request: TurnRequest,
    events: RunEvents,
    deadline: float,
) -> TurnResultJson:
    refused = over_limit(services, loaded, request)
    if refused is not None:
        # The turn stores at least the asked text: refuse it before paying for a model call.
        return record_failure(services, context, loaded, request, refused)
    name, key, cid = services.name, context.entity_key, request.correlation_id
    state = loaded.state
    cache_load(context, None)  # the turn mutates the object; only a saved one is reused
    try:
        older = None
        if isinstance(services.agent.context, FullHistory):
            # Only an agent that asks for its full history reads the archive during a turn.
            older = SessionHistory(services.archive, name, key, state)
        result = run_sync(
            lambda: events.streaming(lambda sink: services.agent.run(
                    state, request, older, on_event=sink, session_id=str(key)
                )),
            deadline,
        )
        state.last_activity_at = now_iso()
        # Older entries move to chunks, stored before this state (which references them).
        services.archive.settle(name, key, state)
        text = dump_state(state)
    except DeadlinePassed:
        # Recorded on the state as it was before the turn, like any failed turn.
        return record_failure(services, context, loaded, request, timeout_failure(services.limits, deadline))
    except Exception as error:
        # A bug, not a model failure (agents records those): answer the run instead of leaving
        # its caller waiting, on the state as it was before the turn.
        log.exception("entity %s@%s run %s raised", name, key, cid)
        bug = failure(ProblemCode.INTERNAL_ERROR, f"{type(error).__name__}: {error}")
        return record_failure(services, context, loaded, request, bug)
    size = len(text.encode("utf-8"))
    if size > services.max_session_bytes:
        return record_failure(services, context, loaded, request, too_large(services, size))
    store_text(context, text)
    cache_load(context, Loaded(text, state))
    log.info("entity %s@%s run %s: %s", name, key, cid, result.status)
    return turn_json(result)


def _answered(
    services: EntityServices, loaded: Loaded, request: TurnRequest, key: str
) -> TurnResultJson | None:
    """The stored answer when this correlation id was already run (a redelivered signal or a
    retry); raises `RunConflict` when the id was used for a different request."""
    record = loaded.state.find_run(request.correlation_id)
    agent = services.agent
    if record is None:
        return answer_archived(services.archive, services.name, key, loaded.state, request, agent)
    if not agent.same_request(request, record.request_hash, record.request_wire):
        raise RunConflict(request.correlation_id)
    result = TurnResult.from_state(loaded.state, request.correlation_id)
    return None if result is None else turn_json(result)
