"""The durable entity of one hosted agent: one instance per session, operations run/reset/delete/get.

The stored entity state is exactly the text `state.dump_state` wrote. It is handed to the SDK as
raw JSON text, so what the Durable extension stores (and what dashboards read) is the state
document itself, and an operation that fails before saving leaves the stored bytes untouched.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from agents import (
    Agent,
    FullHistory,
    InvalidTurnRequest,
    TurnProgress,
    TurnRequest,
    TurnResult,
    failure,
    now_iso,
    wants_session_end,
)
from state import AgentState, TurnFailure, dump_state, load_state

from .._errors import HostingError, InvalidOperation, ProblemCode, RunConflict
from .._ids import MULTITASK_STRATEGIES, STRATEGY_KEY, USER_KEY, entity_name, id_problem
from .._loop import DeadlinePassed, run_sync
from .._settings import DEFAULT_MAX_SESSION_BYTES, RECORD_HEADROOM_BYTES
from .._telemetry import traced_entity_run
from .._wakeup import session_operation
from ..archive import HistoryArchive, SessionHistory, default_archive
from ..stored import (
    MAX_REFUSED_BYTES,
    StoredDocument,
    forget_waiting,
    keep_approvals,
    refused_result,
    reset_text,
    revived_text,
    unrecorded_run,
    with_refused,
)
from ..streams import RunEvents, StreamKey, StreamStore
from ._approvals import TurnApprovals
from ._archived import answer_archived
from ._context import (
    EntityContext,
    Loaded,
    cache_load,
    load,
    operation_input,
    store_text,
    stored_text,
)
from ._deadline import TimeLimits, run_deadline, timeout_failure
from ._lifecycle import answer_archive_epoch, archive_epoch, delete, expire
from ._steps import TurnSteps

log = logging.getLogger("hosting.entity")

OPERATIONS = (
    "run", "step", "cancel", "decide", "expire_approvals", "announce_approvals", "run_status",
    "reset", "delete", "get", "expire", "archive_epoch",
)
"""The operations every agent entity understands."""


class RunDiscarded(HostingError):
    """A run id a reset discarded came again: the operation fails, nothing is run or stored."""


class NotOwner(HostingError):
    """A turn for another user's session: the operation fails, nothing is run or stored."""


def run_user(run_input: Any) -> str | None:
    """The user a `run` operation acts for (`userId`, which hosting adds to the turn request's
    JSON), or None; `InvalidOperation` for anything but an acceptable user id."""
    user = run_input.get(USER_KEY) if isinstance(run_input, dict) else None
    if user is not None and (not isinstance(user, str) or id_problem(user) is not None):
        raise InvalidOperation(f"invalid {USER_KEY} in a run operation's input: {user!r}")
    return user


def run_strategy(run_input: Any) -> str:
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


class AgentEntity(TurnApprovals, TurnSteps):
    """The entity function of one agent; the SDK calls it once per operation of a batch."""

    def __init__(
        self,
        agent: Agent,
        max_session_bytes: int = DEFAULT_MAX_SESSION_BYTES,
        archive: HistoryArchive | None = None,
        streams: StreamStore | None = None,
        limits: TimeLimits | None = None,
    ) -> None:
        self.agent = agent
        self.limits = TimeLimits.from_env() if limits is None else limits
        """The turn deadline and the batch budget (hosting.entity._deadline)."""
        self.name = entity_name(agent.name)
        self.max_session_bytes = max_session_bytes
        self._archive = archive
        self.streams = streams
        """Where runs' events are published while they run (hosting.streams); None: not at all."""

    @property
    def may_pause(self) -> bool:
        """Some tool of the agent may need approval, so its turns may wait for decisions."""
        return any(t.requires_approval is not False for t in self.agent.all_tools)

    @property
    def archive(self) -> HistoryArchive:
        """Where this entity archives older history (the app's default unless one was given)."""
        if self._archive is None:
            self._archive = default_archive()
        return self._archive

    def __call__(self, context: EntityContext) -> None:
        # Callers waiting in this process for this session wake when the operation ends.
        with session_operation(self.name, str(context.entity_key)):
            try:
                self._operate(context)
            finally:
                if stored_text(context) is None:
                    # An operation that stored nothing leaves no entity: the SDK's `set_result`
                    # marks the entity as existing, and the extension would then keep one with
                    # a `null` state (a signal to a deleted session, an approval's expiry after
                    # an erasure, would bring it back as a session nobody can read).
                    context.destruct_on_exit()

    def _operate(self, context: EntityContext) -> None:
        operation = context.operation_name
        if operation == "run":
            run_input = operation_input(context)
            key = context.entity_key
            context.set_result(
                traced_entity_run(self.name, self.agent.name, key, run_input, lambda: self._run(context))
            )
        elif operation == "step":
            # The next step of the turn in progress, signalled by the step before it.
            context.set_result(self._next_step(context))
        elif operation == "cancel":
            # The run ends cancelled if it is queued or between steps (hosting.entity._steps).
            context.set_result(self._cancel(context))
        elif operation == "decide":
            # A decision on a call the turn waits on (hosting.entity._approvals).
            context.set_result(self._decide(context))
        elif operation == "expire_approvals":
            context.set_result(self._expire_approvals(context))
        elif operation == "announce_approvals":
            # A pause, committed: its approval.required event goes out (hosting.entity._approvals).
            self._announce_approvals(context)
        elif operation == "run_status":
            # A waiting orchestration reads where its run is (hosting._orchestration).
            context.set_result(self._run_status(context))
        elif operation == "reset":
            # The answer names the archive the reset left behind (deleted after this commits).
            epoch = archive_epoch(context)
            self._reset(context)
            context.set_result({"epoch": epoch})
        elif operation == "delete":
            # Leaves a tombstone of the discarded run ids (hosting.stored); a user's erasure's names no user.
            delete(context, operation_input(context))
        elif operation == "expire":
            capture = wants_session_end(self.agent.context_providers)
            expire(context, self.name, self.agent.name, capture=capture)
        elif operation == "archive_epoch":
            answer_archive_epoch(context)
        elif operation == "get":
            text = stored_text(context)
            context.set_result(None if text is None else json.loads(text))
        else:
            raise InvalidOperation(
                f"entity {self.name} has no operation {operation!r}; known: {', '.join(OPERATIONS)}"
            )

    # -- state ------------------------------------------------------------------------------

    def _reset(self, context: EntityContext) -> None:
        # Load first: a history we cannot read is never replaced, not even by an empty one.
        old = None
        if stored_text(context) is not None:
            old = StoredDocument.of_state(load(context).state)
        fresh = AgentState.new()
        fresh.last_activity_at = now_iso()
        # The new history remembers the ids of the runs it discards (hosting.stored).
        store_text(context, reset_text(old, fresh))
        cache_load(context, None)

    # -- run --------------------------------------------------------------------------------

    def fail_run(self, context: EntityContext, error: TurnFailure) -> dict[str, Any]:
        """Answer the `run` operation in `context` without running it: recorded as a failed turn
        with `error` (hosting.entity._batch, when the SDK failed the batch), unless it has an
        answer already."""
        return self._run(context, unfinished=error)

    def _run(self, context: EntityContext, unfinished: TurnFailure | None = None) -> dict[str, Any]:
        run_input = operation_input(context)
        try:
            request = TurnRequest.from_json(run_input)
        except (InvalidTurnRequest, ValueError) as error:
            raise InvalidOperation(f"invalid input for {self.name} run: {error}") from error
        user = run_user(run_input)
        if run_strategy(run_input) == "interrupt":
            # The edge marked the session so that a step in flight stops (hosting.http._multitask);
            # from here on the mark would stop this run's own steps and the runs after it.
            own = StreamKey(self.agent.name, str(context.entity_key), request.correlation_id)
            RunEvents(self.streams, own).withdraw_interrupt()
        loaded = load(context)
        if loaded.text and not StoredDocument.of_state(loaded.state).visible_to(user):
            # Another user's session (a turn that raced its creation past the caller's check):
            # nothing is run or stored, and its caller, who cannot see the session, learns nothing.
            raise NotOwner(f"{self.name}@{context.entity_key} belongs to another user; run not accepted")
        if not loaded.text and user is not None:
            loaded = owned_start(user)  # the turn that creates a session gives it its owner
        answer = self._answered(loaded, request, context.entity_key)
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
            return refused_result(request.correlation_id).to_json()  # answered by its id alone
        if loaded.text and marks.is_tombstone:
            # A deleted session's tombstone: a new history starts, still remembering its ids (the
            # one operation that parses twice: the first turn after a delete).
            revived = revived_text(marks, user)
            loaded = Loaded(revived, load_state(revived))
        if unfinished is not None:
            return self._record_failure(context, loaded, request, unfinished)
        if request.orchestration_id is None or self.may_pause:
            # A turn of steps, each its own operation (docs/hosting.md "Durable turns"). An
            # orchestration's call awaits the operation's result, so its turn stays one operation,
            # unless a tool may need approval: then it is stepped too and can pause, and the
            # orchestration waits for its end (hosting._orchestration).
            return self._submit(context, loaded, request, run_strategy(run_input))
        key = StreamKey(self.agent.name, str(context.entity_key), request.correlation_id)
        events = RunEvents(self.streams, key)
        deadline = run_deadline(self.limits)
        try:
            events.begin()
            if deadline <= 0:
                # The batch's time is spent: answered now (retryable), never left to the host's
                # timeout, whose all-failed commit would leave this run without a record.
                timed_out = timeout_failure(self.limits, deadline)
                result = self._record_failure(context, loaded, request, timed_out)
            else:
                result = self._run_turn(context, loaded, request, events, deadline)
        except Exception as error:
            return self._record_bug(context, loaded, request, events, error)
        events.finish(result)
        return result

    def _run_turn(
        self, context: EntityContext, loaded: Loaded, request: TurnRequest, events: RunEvents, deadline: float
    ) -> dict[str, Any]:
        refused = self._over_limit(loaded, request)
        if refused is not None:
            # The turn stores at least the asked text: refuse it before paying for a model call.
            return self._record_failure(context, loaded, request, refused)
        state = loaded.state
        cache_load(context, None)  # the turn mutates the object; only a saved one is reused
        try:
            older = None
            if isinstance(self.agent.context, FullHistory):
                # Only an agent that asks for its full history reads the archive during a turn.
                older = SessionHistory(self.archive, self.name, context.entity_key, state)
            result = run_sync(
                lambda: events.streaming(lambda sink: self.agent.run(
                        state, request, older, on_event=sink, session_id=str(context.entity_key)
                    )),
                deadline,
            )
            state.last_activity_at = now_iso()
            # Older entries move to chunks, stored before this state (which references them).
            self.archive.settle(self.name, context.entity_key, state)
            text = dump_state(state)
        except DeadlinePassed:
            # Recorded on the state as it was before the turn, like any failed turn.
            return self._record_failure(context, loaded, request, timeout_failure(self.limits, deadline))
        except Exception as error:
            # A bug, not a model failure (agents records those): answer the run instead of leaving
            # its caller waiting, on the state as it was before the turn.
            log.exception("entity %s@%s run %s raised", self.name, context.entity_key, request.correlation_id)
            bug = failure(ProblemCode.INTERNAL_ERROR, f"{type(error).__name__}: {error}")
            return self._record_failure(context, loaded, request, bug)
        size = len(text.encode("utf-8"))
        if size > self.max_session_bytes:
            return self._record_failure(context, loaded, request, self._too_large(size))
        store_text(context, text)
        cache_load(context, Loaded(text, state))
        log.info(
            "entity %s@%s run %s: %s",
            self.name,
            context.entity_key,
            request.correlation_id,
            result.status,
        )
        return result.to_json()

    def _record_failure(
        self,
        context: EntityContext,
        loaded: Loaded,
        request: TurnRequest,
        error: TurnFailure,
        progress: TurnProgress | None = None,
    ) -> dict[str, Any]:
        """Record `request` as a failed turn on the state as loaded before the turn (a fresh parse:
        the turn may have changed the live object), save it, and answer the failed result."""
        state = load_state(loaded.text) if loaded.text else AgentState.new()
        approvals = forget_waiting(state, request.correlation_id)
        result = self.agent.record_failure(state, request, error, progress)
        keep_approvals(state, request.correlation_id, approvals)
        text = dump_state(state)
        size = len(text.encode("utf-8"))
        ceiling = self.max_session_bytes + RECORD_HEADROOM_BYTES - MAX_REFUSED_BYTES
        if size > ceiling:
            # Even the record does not fit: keep the run's id only, so it is still answered.
            log.warning(
                "entity %s@%s run %s failed (%s) and its record (%d bytes) is over %d: kept by id",
                self.name, context.entity_key, request.correlation_id, error.code, size, ceiling,
            )
            base = load_state(loaded.text) if loaded.text else AgentState.new()
            forget_waiting(base, request.correlation_id)
            store_text(context, with_refused(dump_state(base), request.correlation_id))
            cache_load(context, None)
            self._start_next(context, base)
            return refused_result(request.correlation_id).to_json()
        store_text(context, text)
        cache_load(context, Loaded(text, state))
        self._start_next(context, state)
        log.warning(
            "entity %s@%s run %s recorded as failed: %s: %s",
            self.name,
            context.entity_key,
            request.correlation_id,
            error.code,
            error.message,
        )
        return result.to_json()

    def _answered(self, loaded: Loaded, request: TurnRequest, key: str) -> dict[str, Any] | None:
        """The stored answer when this correlation id was already run (a redelivered signal or a
        retry); raises `RunConflict` when the id was used for a different request."""
        record = loaded.state.find_run(request.correlation_id)
        if record is None:
            return answer_archived(self.archive, self.name, key, loaded.state, request, self.agent)
        if not self.agent.same_request(request, record.request_hash, record.request_wire):
            raise RunConflict(request.correlation_id)
        result = TurnResult.from_state(loaded.state, request.correlation_id)
        return None if result is None else result.to_json()

