"""The steps of a turn, as operations of the agent's entity (docs/hosting.md "Durable turns").

`run` starts a turn (or queues it behind the turn in progress) and runs its first step; each step
records its outcome in the session document (`data.activeTurn`, hosting.stored) and signals the
entity the `step` operation for the next one; the last step records the turn as a turn run in one
piece is recorded and starts the next queued run. `AgentEntity` (hosting.entity._entity) is the
one class that uses this mixin and provides what it declares.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import replace
from typing import Any

from agents import (
    Agent,
    AwaitingApproval,
    FailureCode,
    FullHistory,
    TurnProgress,
    TurnRequest,
    TurnResult,
    failure,
    now_iso,
)
from state import AgentState, TurnFailure, dump_state, load_state

from .._errors import InvalidOperation, ProblemCode, RunConflict, session_busy_message
from .._loop import DeadlinePassed, run_sync
from .._telemetry import TRACE_CONTEXT_FIELD, traced_entity_run
from ..archive import HistoryArchive, SessionHistory
from ..stored import (
    ActiveTurn,
    Steer,
    StoredDocument,
    UnreadableTurn,
    active_turn,
    keep_approvals,
    queued_requests,
)
from ..streams import RunCancelled, RunEvents, StreamKey, StreamStore
from ._context import EntityContext, Loaded, cache_load, load, operation_input, store_text
from ._deadline import StepTime, TimeLimits, step_time, timeout_failure
from ._signals import send_signal

log = logging.getLogger("hosting.entity")


class TurnSteps:
    """The `step` operation and the start of a stepped turn (a mixin of `AgentEntity`)."""

    agent: Agent
    name: str
    max_session_bytes: int
    streams: StreamStore | None
    limits: TimeLimits

    @property
    def archive(self) -> HistoryArchive:
        raise NotImplementedError

    def _record_failure(
        self,
        context: EntityContext,
        loaded: Loaded,
        request: TurnRequest,
        error: TurnFailure,
        progress: TurnProgress | None = None,
    ) -> dict[str, Any]:
        raise NotImplementedError

    def _pause(
        self,
        context: EntityContext,
        loaded: Loaded,
        turn: ActiveTurn,
        waiting: AwaitingApproval,
        events: RunEvents,
    ) -> dict[str, Any]:
        raise NotImplementedError  # hosting.entity._approvals

    def _cancel(self, context: EntityContext) -> dict[str, Any] | None:
        """The `cancel` operation: the run named by its input ends `run_cancelled` if it is queued
        or between two steps (its finished steps are kept in its record); a finished run is
        answered with its result, unchanged; an unknown one with None."""
        value = operation_input(context)
        cid = value.get("correlationId") if isinstance(value, dict) else None
        if not isinstance(cid, str):
            raise InvalidOperation(f"invalid input for {self.name} cancel: expected {{'correlationId': str}}")
        loaded = load(context)
        recorded = TurnResult.from_state(loaded.state, cid)
        if recorded is not None:
            return recorded.to_json()  # it finished first: a cancel changes nothing
        try:
            current = active_turn(loaded.state)
            queued = [q for q in queued_requests(loaded.state) if q.correlation_id == cid]
        except UnreadableTurn:
            log.exception("entity %s@%s: the turn in progress cannot be read", self.name, context.entity_key)
            return None
        if current is not None and current.correlation_id == cid:
            request, progress = current.request, current.progress
        elif queued:
            request, progress = queued[0], None
        else:
            return None
        result = self._record_failure(context, loaded, request, cancelled(), progress)
        RunEvents(self.streams, StreamKey(self.agent.name, str(context.entity_key), cid)).close(result)
        return result

    def fail_step(self, context: EntityContext, error: TurnFailure) -> dict[str, Any] | None:
        """Answer the `step` operation in `context` without running it: its turn is recorded as a
        failed turn with `error` (hosting.entity._batch), so its caller is answered."""
        value = operation_input(context)
        loaded = load(context)
        try:
            current = active_turn(loaded.state)
        except UnreadableTurn:
            return None
        named = value.get("correlationId") if isinstance(value, dict) else None
        if current is None or named != current.correlation_id:
            return None
        return self._record_failure(context, loaded, current.request, error)

    def _submit(
        self, context: EntityContext, loaded: Loaded, request: TurnRequest, strategy: str = "enqueue"
    ) -> dict[str, Any]:
        """Start the turn of `request`, or, when the session is busy, do what `strategy` says:
        queue it behind the turn in progress (`enqueue`), record it as refused `session_busy`
        (`reject`), or cancel the turn in progress and the queued runs, then start it
        (`interrupt`). See docs/hosting.md "Runs sent to a busy session"."""
        state = loaded.state
        try:
            current = active_turn(state)
            queued = queued_requests(state)
        except UnreadableTurn as error:
            bug = failure(ProblemCode.INTERNAL_ERROR, str(error))
            return self._record_failure(context, loaded, request, bug)
        cid = request.correlation_id
        joined = StoredDocument.of_state(state).steered_into(cid) if strategy == "steer" else None
        if joined is not None and joined != cid:
            return steered(cid, joined)  # sent again after it joined a turn: never runs on its own
        if current is None and not queued:
            return self._step(context, loaded, ActiveTurn(request, TurnProgress(), now_iso()))
        running = [current.request] if current is not None else []
        waiting = [t for t in [*running, *queued] if t.correlation_id == cid]
        if waiting:
            if self.agent.request_identity(waiting[0]) != self.agent.request_identity(request):
                raise RunConflict(cid)
            return {"correlationId": cid, "status": "pending"}  # a redelivered signal: it waits already
        if strategy == "reject":
            result = self._record_failure(context, loaded, request, busy(len(running) + len(queued)))
            # Its stream ends too: a caller following it is answered run.failed session_busy.
            RunEvents(self.streams, StreamKey(self.agent.name, str(context.entity_key), cid)).close(result)
            return result
        if strategy == "interrupt":
            return self._interrupt(context, request)
        if strategy == "steer" and current is not None:
            return self._steer(context, loaded, current, request)
        refused = self._over_limit(loaded, request)
        if refused is not None:
            return self._record_failure(context, loaded, request, refused)
        state.queued_runs = [*state.queued_runs, request.to_json()]
        text = dump_state(state)
        store_text(context, text)
        cache_load(context, Loaded(text, state))
        return {"correlationId": cid, "status": "pending"}

    def _steer(
        self, context: EntityContext, loaded: Loaded, current: ActiveTurn, request: TurnRequest
    ) -> dict[str, Any]:
        """Store the messages of `request` in the turn in progress, for its next model step; its
        answer is the running run's (docs/hosting.md "Runs sent to a busy session")."""
        refused = self._over_limit(loaded, request)
        if refused is not None:
            return self._record_failure(context, loaded, request, refused)
        state = loaded.state
        joined = replace(current, steered=[*current.steered, Steer.of(request, now_iso())])
        state.active_turn = joined.to_json()
        text = dump_state(state)
        store_text(context, text)
        cache_load(context, Loaded(text, state))
        return steered(request.correlation_id, current.correlation_id)

    def _interrupt(self, context: EntityContext, request: TurnRequest) -> dict[str, Any]:
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
            result = self._record_failure(context, loaded, victim, cancelled(), progress)
            key = StreamKey(self.agent.name, str(context.entity_key), victim.correlation_id)
            RunEvents(self.streams, key).close(result)
        return self._step(context, loaded, ActiveTurn(request, TurnProgress(), now_iso()))

    def _next_step(self, context: EntityContext) -> dict[str, Any] | None:
        """The `step` operation: run the step its input names, if it is still the next one (a
        stale signal, after a reset or a step already run, changes nothing)."""
        value = operation_input(context)
        if not isinstance(value, dict):
            raise InvalidOperation(f"invalid input for {self.name} step: expected an object")
        cid, step = value.get("correlationId"), value.get("step")
        loaded = load(context)
        state = loaded.state
        try:
            current = active_turn(state)
            queued = queued_requests(state) if current is None else []
        except UnreadableTurn:
            log.exception("entity %s@%s: the turn in progress cannot be read", self.name, context.entity_key)
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
        turn = current
        # Each step's operation has its span, a child of the trace the turn's request carried
        # (the span reads only these two fields: no need to write the whole request out).
        carried = {"correlationId": turn.correlation_id, TRACE_CONTEXT_FIELD: turn.request.trace_context}
        return traced_entity_run(
            self.name, self.agent.name, context.entity_key, carried,
            lambda: self._step(context, loaded, turn), operation="step",
        )

    def _step(self, context: EntityContext, loaded: Loaded, turn: ActiveTurn) -> dict[str, Any]:
        """Run the next step of `turn`, record it, and signal the one after it."""
        request = turn.request
        time = step_time(self.limits, turn.started_at)
        if time.seconds <= 0 and time.deferrable:
            return self._defer(context, loaded, turn)  # this batch's time is spent, not the turn's
        key = StreamKey(self.agent.name, str(context.entity_key), request.correlation_id)
        events = RunEvents(self.streams, key)
        try:
            events.begin_step(turn.progress.steps, turn.stream_seq)
            if time.seconds <= 0:
                return self._timed_out(context, loaded, request, events, time)
            return self._run_step(context, loaded, turn, events, time)
        except Exception as error:
            return self._record_bug(context, loaded, request, events, error)

    def _record_bug(
        self,
        context: EntityContext,
        loaded: Loaded,
        request: TurnRequest,
        events: RunEvents,
        error: Exception,
    ) -> dict[str, Any]:
        """Whatever failed, the run gets a record of its own (hosting.stored): its caller never
        waits for an answer that cannot come. Called from the `except` that caught `error`."""
        log.exception("entity %s@%s run %s failed", self.name, context.entity_key, request.correlation_id)
        bug = failure(ProblemCode.INTERNAL_ERROR, f"{type(error).__name__}: {error}")
        with contextlib.suppress(Exception):
            events.fail(bug.code, bug.message)
        return self._record_failure(context, loaded, request, bug)

    def _defer(self, context: EntityContext, loaded: Loaded, turn: ActiveTurn) -> dict[str, Any]:
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
        log.info("entity %s@%s run %s: step %d moved to the next batch", self.name, key, cid, step)
        send_signal(self.name, str(context.entity_key), "step", {"correlationId": cid, "step": step})
        return {"correlationId": cid, "status": "running", "step": step}

    def _timed_out(
        self, context: EntityContext, loaded: Loaded, request: TurnRequest, events: RunEvents, time: StepTime
    ) -> dict[str, Any]:
        """Record the turn as failed `timeout`: its deadline passed (counted from its start), or
        one step took longer than a whole batch's budget."""
        error = timeout_failure(self.limits, time.seconds, time.batch_bound)
        result = self._record_failure(context, loaded, request, error)
        events.finish(result)
        return result

    def _run_step(
        self, context: EntityContext, loaded: Loaded, turn: ActiveTurn, events: RunEvents, time: StepTime
    ) -> dict[str, Any]:
        request = turn.request
        # Runs steered into the turn join it here when this step is a model call.
        turn = turn.with_steered_applied()
        refused = self._over_limit(loaded, request) if turn.progress.steps == 0 else None
        if refused is not None:
            # The turn stores at least the asked text: refuse it before paying for a model call.
            return self._record_failure(context, loaded, request, refused)
        state = loaded.state
        cache_load(context, None)  # the step mutates the object; only a saved one is reused
        older = None
        if isinstance(self.agent.context, FullHistory):
            older = SessionHistory(self.archive, self.name, context.entity_key, state)
        try:
            outcome = run_sync(
                lambda: events.stoppable(
                    events.streaming(
                        lambda sink: self.agent.run_step(
                            state, request, turn.progress, older, on_event=sink,
                            session_id=str(context.entity_key), decisions=turn.decisions,
                        )
                    )
                ),
                time.seconds,
            )
        except RunCancelled:
            # Cancelled while the step ran: its work is abandoned, the finished steps are kept.
            result = self._record_failure(context, loaded, request, cancelled(), turn.progress)
            events.finish(result)
            return result
        except DeadlinePassed:
            # Nothing of the attempt is stored: the step runs again in a new batch, or the turn
            # is recorded as failed on the state as it was before the step.
            if time.deferrable:
                return self._defer(context, loaded, turn)
            return self._timed_out(context, loaded, request, events, time)
        if isinstance(outcome, AwaitingApproval):
            return self._pause(context, loaded, turn, outcome, events)  # no next step until decided
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
            self.archive.settle(self.name, context.entity_key, state)
        text = dump_state(state)
        size = len(text.encode("utf-8"))
        if size > self.max_session_bytes:
            return self._record_failure(context, loaded, request, self._too_large(size))
        store_text(context, text)
        cache_load(context, Loaded(text, state))
        cid = request.correlation_id
        if isinstance(outcome, TurnProgress):
            after = {"correlationId": cid, "step": outcome.steps}
            send_signal(self.name, str(context.entity_key), "step", after)
            return {"correlationId": cid, "status": "running", "step": outcome.steps}
        result = outcome.to_json()
        events.finish(result)
        self._start_next(context, state)
        log.info("entity %s@%s run %s: %s", self.name, context.entity_key, cid, outcome.status)
        return result

    def _start_next(self, context: EntityContext, state: AgentState) -> None:
        """Signal the first queued run to start once no turn is in progress."""
        if state.active_turn is not None:
            return
        try:
            queued = queued_requests(state)
        except UnreadableTurn:
            log.exception("entity %s@%s: a queued run cannot be read", self.name, context.entity_key)
            return
        if queued:
            first = {"correlationId": queued[0].correlation_id, "step": 0}
            send_signal(self.name, str(context.entity_key), "step", first)

    def _over_limit(self, loaded: Loaded, request: TurnRequest) -> TurnFailure | None:
        """`session_too_large` when the stored state and the asked text are over the limit."""
        stored_bytes = len(loaded.text.encode("utf-8"))
        asked_bytes = sum(len(m.text.encode("utf-8")) for m in request.messages)
        size = stored_bytes + asked_bytes
        return self._too_large(size) if size > self.max_session_bytes else None

    def _too_large(self, size: int) -> TurnFailure:
        return failure(
            ProblemCode.SESSION_TOO_LARGE,
            f"the session would grow to at least {size} bytes, over its limit of "
            f"{self.max_session_bytes} bytes (max_session_bytes), so this turn was refused and only "
            "this failure was recorded; start a new session (or reset this one) to continue",
        )


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


def steered(correlation_id: str, running: str) -> dict[str, Any]:
    """The answer of a run that joined the running run `running` (its answer is that run's)."""
    return {"correlationId": correlation_id, "status": "steered", "steeredInto": running}
