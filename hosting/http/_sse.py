"""The HTTP side: a run's events as Server-Sent Events (`text/event-stream`).

Each event is ``id: <seq>``, ``event: <type>``, ``data: <one JSON object>``. The terminal events
are rendered here, from the stored turn result, by the very code that renders the JSON answer of
a finished run: `run.completed` carries the body `POST .../run` answers with 200, `run.failed`
the problem document (with the same `code`) it answers with otherwise. A comment line
(``: heartbeat``) goes out whenever the stream is idle for `heartbeat_seconds`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import azure.durable_functions as df
import azure.functions as func
from starlette.responses import Response, StreamingResponse

from agents import Agent, TurnResult
from state import HistoryUnavailable

from .._errors import ProblemCode, ProblemError
from .._ids import entity_name
from .._settings import DEFAULT_HEARTBEAT_SECONDS as STREAM_DEFAULT_HEARTBEAT
from .._settings import STREAM_HEARTBEAT_ENV, StreamSettings
from ..client import (
    Awaiting,
    DurableClient,
    Finished,
    Pending,
    Snapshot,
    find_archived_run,
    read_session,
    state_problem,
    wait_for_run,
)
from ..lifecycle import start_approval_expiry
from ..stored import INTERNAL, Approval, Internal, RunApprovals, Viewer, unrecorded_run
from ..streams import (
    APPROVAL_REQUIRED,
    EVENT_STREAM,
    RUN_CANCELLED,
    RUN_COMPLETED,
    RUN_FAILED,
    RUN_STARTED,
    StreamEvent,
    StreamKey,
    StreamStore,
    StreamStoreUnavailable,
)
from ._answers import Answers, Failed, Succeeded
from ._lookup import claimed_by_other, hosted_agent
from ._problems import problem_body
from ._refusals import discarded_problem, history_unavailable, no_session, unreadable
from ._requests import CORRELATION_HEADER, SESSION_HEADER, check_id, resume_after
from ._users import caller_user

log = logging.getLogger("hosting.streams")

Job = Callable[[], Awaitable[None]]
_running: set[asyncio.Task[None]] = set()
"""Background jobs in flight (the loop keeps only weak references to tasks)."""


def background(key: StreamKey, job: Job) -> None:
    """Run `job` as a task of its own, so neither the stream's end nor its reader leaving cancels
    it; a failure is logged."""

    async def guarded() -> None:
        try:
            await job()
        except Exception:
            log.exception("background work of run %s failed", key)

    task = asyncio.get_running_loop().create_task(guarded())
    _running.add(task)
    task.add_done_callback(_running.discard)


DEFAULT_HEARTBEAT_SECONDS = STREAM_DEFAULT_HEARTBEAT
HEARTBEAT_ENV = STREAM_HEARTBEAT_ENV
COMMIT_WAIT_LIMIT_SECONDS = 3600.0
"""How long a reader waits at most, after the terminal event, for the host to have stored the
turn. The entity publishes a run's answer when its operation ends, but the host commits it with
the whole batch, after every other queued turn of the session (maxEntityOperationBatchSize of
them); the wait follows that batch however long it takes (heartbeats keep the stream open
meanwhile) and gives up only past any functionTimeout the app runs with (host.json: 10 min),
when the batch can no longer commit, sending the published answer as before."""


def heartbeat_from_env() -> float:
    """`DURABLE_AGENTS_STREAM_HEARTBEAT_SECONDS` (0.05 to 300), else 15 seconds: read from the
    environment now (`build_app` reads it once and gives `RunStreams` its `heartbeat_seconds`)."""
    return StreamSettings.read_one("heartbeat_seconds")


RECONNECT_MS = 500
"""The `retry:` every stream's first event carries: how long an EventSource waits before it
reconnects (browsers default to about 3 s). Its reconnect after the terminal event is answered 204
and closes it, so this is how long a reader waits for that close; a reader cut off mid-run resumes
after it too. Short, not zero: a host that is down is not asked many times a second."""
_RETRY_FIELD = f"retry: {RECONNECT_MS}\n".encode()

Render = Callable[[str, str, TurnResult], func.HttpResponse]


def terminal_seq(last: StreamEvent | None, finished: bool) -> int | None:
    """The id of a run's terminal event as the stream has it: the retained terminal event's, or,
    for a stored run whose terminal event was never published, one past the last retained event
    (so it is the same on every reconnect); None while the run is unfinished."""
    if last is not None and last.terminal:
        return last.seq
    if finished:
        return (last.seq if last is not None else 0) + 1
    return None


def sse_frame(event_id: int, kind: str, data: dict[str, Any]) -> bytes:
    """One SSE event; the JSON is on one line, so it is one `data:` field."""
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"id: {event_id}\nevent: {kind}\ndata: {payload}\n\n".encode()


class RunStreams:
    """Serves runs' event streams from the store, bound to the API's answer rendering."""

    def __init__(
        self,
        answers: Answers,
        agents: Mapping[str, Agent],
        store: StreamStore,
        heartbeat_seconds: float | None = None,
    ) -> None:
        self.answers = answers
        self.agents = agents
        self.store = store
        self.heartbeat_seconds = heartbeat_from_env() if heartbeat_seconds is None else heartbeat_seconds

    # -- terminal events --------------------------------------------------------------------

    def terminal(self, agent: str, session_id: str, result: TurnResult) -> tuple[str, dict[str, Any]]:
        """The terminal event of a finished run: the JSON answer or problem the API gives for it."""
        match self.answers.run_answer(agent, session_id, result):
            case Succeeded(body=body):
                return RUN_COMPLETED, body.model_dump(mode="json", exclude_none=False)
            case Failed(problem=problem):
                kind = RUN_CANCELLED if problem.code == ProblemCode.RUN_CANCELLED else RUN_FAILED
                return kind, problem_body(problem)

    async def _values(
        self, client: DurableClient, key: StreamKey, event: StreamEvent
    ) -> AsyncIterator[SseEvent]:
        """The event; for the terminal event, heartbeats while its batch is being committed, then
        the stored answer."""
        if not event.terminal:
            yield SseEvent(event.seq, event.type, event.data)
            return
        # The entity publishes its answer before the host commits it (with the rest of the
        # batch): wait for the stored run, so a client that has the terminal event finds the turn
        # stored, and the event is the stored answer itself.
        deadline = time.monotonic() + COMMIT_WAIT_LIMIT_SECONDS
        while True:
            committed, result = await self._committed(client, key)
            if committed or time.monotonic() >= deadline:
                break
            yield HEARTBEAT
        yield self._terminal_event(key, event, result)

    def _terminal_event(self, key: StreamKey, event: StreamEvent, result: TurnResult | None) -> SseEvent:
        if result is None:
            try:
                result = TurnResult.from_json(event.data)
            except Exception:  # not ours to fail on: pass it as published
                log.warning("stream %s: terminal event %d is not a turn result", key, event.seq)
                return SseEvent(event.seq, event.type, event.data)
        kind, body = self.terminal(key.agent, key.session_id, result)
        return SseEvent(event.seq, kind, body)

    async def _committed(self, client: DurableClient, key: StreamKey) -> tuple[bool, TurnResult | None]:
        """(whether the wait is over, the stored result): waits one heartbeat at most; over when
        the run has an outcome, or its state cannot be read (the published answer is sent)."""
        try:
            outcome = await wait_for_run(
                client,
                df.EntityId(entity_name(key.agent), key.session_id),
                agent=key.agent,
                session_id=key.session_id,
                correlation_id=key.correlation_id,
                timeout=self.heartbeat_seconds,
                state_checked=True,
            )
        except Exception:
            log.warning("stream %s: the stored run could not be read; sending the published answer", key)
            return True, None
        match outcome:
            case Finished(run=run):
                return True, run.result()
            case Pending() | Awaiting():
                return False, None
            case _:
                return True, None

    async def _stored_result(self, client: DurableClient, key: StreamKey) -> TurnResult | None:

        snapshot = await read_session(client, df.EntityId(entity_name(key.agent), key.session_id))
        if not snapshot.exists:
            return None
        run = snapshot.stored.find_run(key.correlation_id)
        return None if run is None else run.result()

    # -- responses --------------------------------------------------------------------------

    def _headers(self, key: StreamKey) -> dict[str, str]:
        location = self.answers.run_location(key.agent, key.session_id, key.correlation_id)
        return {
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",  # nginx and similar proxies: pass events on at once
            SESSION_HEADER: key.session_id,
            CORRELATION_HEADER: key.correlation_id,
            "Location": location,
        }

    def ended(self, key: StreamKey) -> Response:
        """204: the reader has the run's terminal event; an EventSource stops reconnecting on it."""
        return Response(status_code=204, headers=self._headers(key))

    def response(self, body: AsyncGenerator[bytes, None], key: StreamKey) -> StreamingResponse:
        """The 200 `text/event-stream` answer carrying `body`, its first event with `retry:`."""
        return StreamingResponse(
            _with_retry(body), status_code=200, media_type=EVENT_STREAM, headers=self._headers(key)
        )

    async def open(
        self,
        client: DurableClient,
        key: StreamKey,
        after: int,
        snapshot: Snapshot | None = None,
        user: Viewer = INTERNAL,
    ) -> Response:
        """The stream of a run as its HTTP answer (`opened`, rendered)."""
        return self.render(client, await self.opened(client, key, after, snapshot, user))

    def render(self, client: DurableClient, opened: StreamOpened) -> Response:
        """An opened stream as the HTTP answer: 204 once the reader has the terminal event, else
        the events as `text/event-stream`."""
        match opened:
            case StreamEnded(key=key):
                return self.ended(key)
            case StreamLive(key=key, after=after, then=then):
                return self.attach(client, key, after, then)
            case StreamOnce(key=key, result=result):
                return self.response(_frames(self._once(key, result)), key)

    def events(self, client: DurableClient, opened: StreamOpened) -> AsyncGenerator[SseEvent, None]:
        """An opened stream's events as values (what `render` serialises), for a protocol edge
        that converts them; closing the generator is its reader leaving."""
        match opened:
            case StreamEnded():
                return _none()
            case StreamLive(key=key, after=after, then=then):
                return self.follow(client, key, after, then)
            case StreamOnce(key=key, result=result):
                return self._once(key, result)

    async def opened(
        self,
        client: DurableClient,
        key: StreamKey,
        after: int,
        snapshot: Snapshot | None = None,
        user: Viewer = INTERNAL,
    ) -> StreamOpened:
        """The stream of a run: its retained events after `after`, then live ones; a finished run
        whose events have expired gets its result as one event; 404 `run_not_found` otherwise.
        A session whose stored state this build cannot read is 409 `state_unreadable` at once, as
        on every route (`snapshot`: the session as the caller has just read and checked it). Another
        user's session is 404 `session_not_found` (`user`: whom the caller acts for)."""
        if snapshot is None:
            snapshot = await read_session(client, df.EntityId(entity_name(key.agent), key.session_id))
            if (snapshot.exists or snapshot.deleted) and not snapshot.stored.visible_to(user):
                raise no_session(key.agent, key.session_id)
            if not (snapshot.exists or snapshot.deleted) and not isinstance(user, Internal):
                await self._check_pending_owner(client, key, user)
            reason = state_problem(snapshot.document) if snapshot.exists else None
            if reason is not None:
                raise unreadable(key.agent, key.session_id, reason)
        stored = snapshot.stored
        unrecorded = None
        if snapshot.exists or snapshot.deleted:
            # As the run resource answers: a run a reset or delete discarded is 410 (its events,
            # if still retained, are of a run no longer in the session's history); a refusal
            # kept by id only is its failed answer.
            unrecorded = unrecorded_run(stored, key.correlation_id, deleted=snapshot.deleted)
            if unrecorded is not None and unrecorded.discarded:
                raise discarded_problem(
                    key.agent, key.session_id, key.correlation_id, deleted=unrecorded.deleted
                )
        run = stored.find_run(key.correlation_id) if snapshot.exists else None
        try:
            retained = await self.store.exists(key)
        except StreamStoreUnavailable:
            if run is None:
                raise
            # The store is down but the run has finished: its answer is in the session's state,
            # served as one event, as for a run whose events have expired.
            retained = False
        if retained:
            last = await self.store.last(key)
            finished = run is not None and run.result() is not None
            end = terminal_seq(last, finished)
            if end is not None and after >= end:
                return StreamEnded(key)  # the reader has the terminal event already
            return StreamLive(key, after)
        if run is None and snapshot.exists:
            # A finished run whose entries were archived, as the run resource finds it.
            try:
                run = await find_archived_run(key.agent, key.session_id, stored, key.correlation_id)
            except HistoryUnavailable as error:
                raise history_unavailable(error, key.agent, key.session_id) from None
        run = run or (unrecorded.run if unrecorded is not None else None)
        result = None if run is None else run.result()
        if result is None and snapshot.exists and key.correlation_id in stored.waiting_ids():
            # Queued, or between two steps, and its stream is gone (a store emptied under it: a
            # Redis restarted without its data): follow what its next steps publish.
            await self.store.declare(key)
            return StreamLive(key, after)
        if result is None:
            raise ProblemError(
                ProblemCode.RUN_NOT_FOUND,
                f"agent {key.agent!r} has no run {key.correlation_id!r} in session {key.session_id!r} "
                "(or its events have expired and it has not finished)",
                field="correlation_id",
            )
        if after > 0:
            # Its events have expired: a reader that names one has had its stream; sending the
            # answer again under a new id would start an EventSource's reconnect loop. The run
            # resource keeps the answer.
            return StreamEnded(key)
        return StreamOnce(key, result)

    async def _check_pending_owner(self, client: DurableClient, key: StreamKey, user: str | None) -> None:
        """404 for another user's pending first run: its session is not stored yet, so its
        claim (hosting.http._users.claim_identity) is what knows the user; a claim gone since
        means the session is stored now, whose owner is checked instead."""
        other = await claimed_by_other(self.store, key, user)
        if other:
            raise no_session(key.agent, key.session_id)
        if other is not None:
            return
        snapshot = await read_session(client, df.EntityId(entity_name(key.agent), key.session_id))
        if (snapshot.exists or snapshot.deleted) and not snapshot.stored.visible_to(user):
            raise no_session(key.agent, key.session_id)

    async def _once(self, key: StreamKey, result: TurnResult) -> AsyncGenerator[SseEvent, None]:
        kind, body = self.terminal(key.agent, key.session_id, result)
        yield SseEvent(1, kind, body)

    async def follow(
        self, client: DurableClient, key: StreamKey, after: int, then: Job | None = None
    ) -> AsyncGenerator[SseEvent, None]:
        """The live events of a declared run after `after`, as values (heartbeats included), up
        to its terminal event; `then` as `attach` runs it."""
        try:
            async for event in self.store.follow(key, after, self.heartbeat_seconds):
                if event is not None:
                    after = event.seq
                    async for value in self._values(client, key, event):
                        yield value
                    if then is not None and event.type != RUN_STARTED:
                        background(key, then)
                        then = None
                    if event.type == APPROVAL_REQUIRED:
                        # A reader that only follows the stream starts the approvals' expiry too.
                        background(key, _expiry_of(client, key, event.data))
                    continue
                # Idle: if the run is stored but its terminal event never came (its publishing
                # failed), answer from the stored state instead of waiting forever.
                result = await self._stored_result(client, key)
                last = await self.store.last(key) if result is not None else None
                if result is not None and not (last is not None and last.terminal and last.seq > after):
                    seq = terminal_seq(last, finished=True)
                    if seq is not None and seq > after:
                        kind, body = self.terminal(key.agent, key.session_id, result)
                        yield SseEvent(seq, kind, body)
                    return
                yield HEARTBEAT
        except Exception:
            # Headers are out; all that is left is to end the stream (the client reconnects).
            log.exception("stream of run %s broke off", key)
        finally:
            if then is not None:  # the stream ended (or its reader left) before an answer event
                background(key, then)

    # -- handlers ---------------------------------------------------------------------------

    async def get(self, req: func.HttpRequest, client: DurableClient) -> Response:
        """GET agents/{agent}/sessions/{session_id}/runs/{correlation_id}/stream"""
        agent = hosted_agent(self.agents, req)
        session_id = check_id(req.route_params.get("session_id", ""), "session_id")
        correlation_id = check_id(
            req.route_params.get("correlation_id", ""), "correlation_id", ProblemCode.INVALID_CORRELATION_ID
        )
        after = resume_after(req)
        user = caller_user(req)
        return await self.open(client, StreamKey(agent.name, session_id, correlation_id), after, user=user)

    def attach(
        self, client: DurableClient, key: StreamKey, after: int, then: Job | None = None
    ) -> StreamingResponse:
        """The live stream of a declared run (its events after `after`, then as they come);
        `then` is started in the background after the first event past `run.started` (or when
        the stream ends first), off the path to the first token."""
        return self.response(_frames(self.follow(client, key, after, then)), key)


async def _with_retry(body: AsyncGenerator[bytes, None]) -> AsyncIterator[bytes]:
    """`body` with the `retry:` field in its first event's frame: in an event, not a block of its
    own, which some clients (httpx-sse) would hand over as an empty event; heartbeats before it
    pass unchanged. Closed with it, so `body`'s cleanup runs when its reader leaves."""
    sent = False
    async with contextlib.aclosing(body):
        async for frame in body:
            if not sent and frame.startswith(b"id: "):
                frame, sent = _RETRY_FIELD + frame, True
            yield frame


def _expiry_of(client: DurableClient, key: StreamKey, data: dict[str, Any]) -> Job:
    """Start the expiry of the approvals an `approval.required` event names (hosting.lifecycle)."""

    async def start() -> None:
        try:
            approvals = [Approval.from_public_json(item) for item in data.get("approvals") or []]
        except ValueError:
            return
        step = data.get("step")
        if isinstance(step, int) and approvals:
            paused = RunApprovals(approvals, step)
            await start_approval_expiry(client, key.agent, key.session_id, key.correlation_id, paused)

    return start


@dataclass(frozen=True)
class SseEvent:
    """One event of a run's stream as a value: what an SSE frame carries (its id, type and data),
    for the SSE answer and for the protocol edges that convert it (Responses, AG-UI, A2A). A
    heartbeat has no id and no type."""

    id: int | None
    type: str | None
    data: dict[str, Any]


HEARTBEAT = SseEvent(None, None, {})
"""The stream is idle (a comment line on the wire)."""


async def _frames(events: AsyncGenerator[SseEvent, None]) -> AsyncGenerator[bytes, None]:
    """The events as SSE frames; closed with them, so their cleanup runs when the reader leaves."""
    async with contextlib.aclosing(events):
        async for event in events:
            if event.type is None or event.id is None:
                yield b": heartbeat\n\n"
            else:
                yield sse_frame(event.id, event.type, event.data)


async def _none() -> AsyncGenerator[SseEvent, None]:
    return
    yield  # an async generator that yields nothing


@dataclass(frozen=True)
class StreamEnded:
    """The reader has the run's terminal event already (an EventSource's reconnect: 204)."""

    key: StreamKey


@dataclass(frozen=True)
class StreamLive:
    """The run's retained events after `after`, then live ones; `then`: work started once the
    first answer event is out (`RunStreams.attach`)."""

    key: StreamKey
    after: int
    then: Job | None = None


@dataclass(frozen=True)
class StreamOnce:
    """A finished run whose events have expired: its result, as one terminal event."""

    key: StreamKey
    result: TurnResult


StreamOpened = StreamEnded | StreamLive | StreamOnce
"""What opening a run's stream came to (`RunStreams.opened`)."""
