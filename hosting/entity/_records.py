"""A run that ends without its turn finishing, recorded: the failures the entity records (a bug, a
refused size, a cancel, a busy session), and the next queued run started once a turn has ended.

Every run gets a record of its own (hosting.stored), whatever failed, so that its caller is
answered from the stored state and never waits for an answer that cannot come.
"""

from __future__ import annotations

import contextlib
import logging

from agents import FailureCode, TurnProgress, TurnRequest, failure
from state import AgentState, TurnFailure, dump_state, load_state

from .._errors import ProblemCode, session_busy_message
from .._settings import RECORD_HEADROOM_BYTES
from ..stored import (
    MAX_REFUSED_BYTES,
    UnreadableTurn,
    forget_waiting,
    keep_approvals,
    queued_requests,
    refused_result,
    with_refused,
)
from ..streams import RunEvents
from ._context import EntityContext, Loaded, cache_load, store_text
from ._services import EntityServices
from ._signals import send_signal
from ._wire import StepSignal, TurnResultJson, turn_json

log = logging.getLogger("hosting.entity")


def record_failure(
    services: EntityServices,
    context: EntityContext,
    loaded: Loaded,
    request: TurnRequest,
    error: TurnFailure,
    progress: TurnProgress | None = None,
) -> TurnResultJson:
    """Record `request` as a failed turn on the state as loaded before the turn (a fresh parse:
    the turn may have changed the live object), save it, and answer the failed result."""
    name, key, cid = services.name, context.entity_key, request.correlation_id
    state = load_state(loaded.text) if loaded.text else AgentState.new()
    approvals = forget_waiting(state, cid)
    result = services.agent.record_failure(state, request, error, progress)
    keep_approvals(state, cid, approvals)
    text = dump_state(state)
    size = len(text.encode("utf-8"))
    ceiling = services.max_session_bytes + RECORD_HEADROOM_BYTES - MAX_REFUSED_BYTES
    if size > ceiling:
        # Even the record does not fit: keep the run's id only, so it is still answered.
        log.warning(
            "entity %s@%s run %s failed (%s) and its record (%d bytes) is over %d: kept by id",
            name, key, cid, error.code, size, ceiling,
        )
        base = load_state(loaded.text) if loaded.text else AgentState.new()
        forget_waiting(base, cid)
        store_text(context, with_refused(dump_state(base), cid))
        cache_load(context, None)
        start_next(services, context, base)
        return turn_json(refused_result(cid))
    store_text(context, text)
    cache_load(context, Loaded(text, state))
    start_next(services, context, state)
    log.warning("entity %s@%s run %s recorded as failed: %s: %s", name, key, cid, error.code, error.message)
    return turn_json(result)


def record_bug(
    services: EntityServices,
    context: EntityContext,
    loaded: Loaded,
    request: TurnRequest,
    events: RunEvents,
    error: Exception,
) -> TurnResultJson:
    """Record the run as failed `internal_error`: `error` is a bug, not a model failure (agents
    records those). Called from the `except` that caught `error`, so its traceback is logged."""
    key, cid = context.entity_key, request.correlation_id
    log.exception("entity %s@%s run %s failed", services.name, key, cid)
    bug = failure(ProblemCode.INTERNAL_ERROR, f"{type(error).__name__}: {error}")
    with contextlib.suppress(Exception):
        events.fail(bug.code, bug.message)
    return record_failure(services, context, loaded, request, bug)


def start_next(services: EntityServices, context: EntityContext, state: AgentState) -> None:
    """Signal the first queued run to start once no turn is in progress."""
    if state.active_turn is not None:
        return
    try:
        queued = queued_requests(state)
    except UnreadableTurn:
        log.exception("entity %s@%s: a queued run cannot be read", services.name, context.entity_key)
        return
    if queued:
        first: StepSignal = {"correlationId": queued[0].correlation_id, "step": 0}
        send_signal(services.name, str(context.entity_key), "step", first)


def over_limit(services: EntityServices, loaded: Loaded, request: TurnRequest) -> TurnFailure | None:
    """`session_too_large` when the stored state and the asked text are over the limit."""
    stored_bytes = len(loaded.text.encode("utf-8"))
    asked_bytes = sum(len(m.text.encode("utf-8")) for m in request.messages)
    size = stored_bytes + asked_bytes
    return too_large(services, size) if size > services.max_session_bytes else None


def too_large(services: EntityServices, size: int) -> TurnFailure:
    """`session_too_large` for a session that would grow to `size` bytes."""
    return failure(
        ProblemCode.SESSION_TOO_LARGE,
        f"the session would grow to at least {size} bytes, over its limit of "
        f"{services.max_session_bytes} bytes (max_session_bytes), so this turn was refused and only "
        "this failure was recorded; start a new session (or reset this one) to continue",
    )


def busy(waiting: int) -> TurnFailure:
    """The failure a run that asked `reject` of a busy session is recorded with."""
    return failure(
        ProblemCode.SESSION_BUSY,
        session_busy_message(waiting),
    )


def cancelled() -> TurnFailure:
    """The failure a cancelled run is recorded with."""
    return failure(
        FailureCode.CANCELLED,
        "the run was cancelled; the steps it finished before are kept in its record",
    )
