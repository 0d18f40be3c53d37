"""The AG-UI handler: converts a `RunAgentInput` to typed values for the product's own API (a
`run_call` for `Api.submit_run`, or `Api.decide` for `resume`) and the run's events (as values,
from hosting.http.RunStreams) to AG-UI events; nothing else."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import azure.functions as func
from ag_ui.core import (
    BaseEvent,
    RunErrorEvent,
    RunFinishedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)
from starlette.responses import Response as StarletteResponse
from starlette.responses import StreamingResponse

from .._errors import ProblemCode, ProblemError
from ..client import DurableClient
from ..http import (
    EVENT_STREAM,
    Api,
    RunArgs,
    RunStreamed,
    SseEvent,
    StreamEnded,
    approval_decision,
    caller_user,
    hosted_agent,
    run_call,
)
from ..streams import StreamKey
from ._events import AgUiEvents, event_position, frame, parse_interrupt_id
from ._request import AgUiCall, parse_input

log = logging.getLogger("hosting.agui")

Answer = func.HttpResponse | StarletteResponse

_FIELDS = {"session_id": "threadId", "correlation_id": "runId", "message": "messages"}
"""The run body's fields by RunAgentInput's names, for the run route's refusals."""

_TERMINAL = (RunFinishedEvent, RunErrorEvent)


def _renamed(problem: ProblemError) -> ProblemError:
    if problem.field in _FIELDS:
        problem.field = _FIELDS[problem.field]
    return problem


class AgUiApi:
    """`POST agents/{agent}/ag-ui`, bound to the product's API (its agents, settings and streams)."""

    def __init__(self, api: Api) -> None:
        self.api = api

    async def run(self, req: func.HttpRequest, client: DurableClient) -> Answer:
        agent = hosted_agent(self.api.agents, req)
        call = parse_input(req.get_body())
        resume_at = event_position(req.headers.get("last-event-id"))
        if call.resume:
            return await self._resume(req, client, agent.name, call, resume_at)
        assert call.message is not None  # parse_input refuses a run with neither input nor resume
        try:
            args = RunArgs(
                message=call.message,
                session_id=call.thread_id,
                correlation_id=call.run_id,
                user_id=caller_user(req),
                event_stream=True,
            )
            submitted = await self.api.submit_run(client, agent, run_call(agent.name, args))
            opened = None
            if isinstance(submitted, RunStreamed):
                opened = await self.api.opened_stream(client, submitted)
        except ProblemError as problem:
            raise _renamed(problem) from None
        if opened is None:  # not a stream (a failure once the turn was sent: its ids, as JSON)
            return await self.api.render_submitted(client, submitted)
        if isinstance(opened, StreamEnded):
            return self.api.streams.render(client, opened)
        events = AgUiEvents(call.thread_id, call.run_id, call.run_id)
        return self._response(events, self.api.streams.events(client, opened), resume_at)

    async def _resume(
        self,
        req: func.HttpRequest,
        client: DurableClient,
        agent: str,
        call: AgUiCall,
        resume_at: tuple[int, int] | None,
    ) -> Answer:
        """Each `resume` entry decides one approval interrupt of the thread's paused run; the
        answer is that run's stream from where it paused, as this AG-UI run."""
        paused: tuple[str, int] | None = None
        decisions: list[dict[str, Any]] = []
        for index, entry in enumerate(call.resume):
            where = f"resume[{index}]"
            parsed = parse_interrupt_id(str(entry.get("interruptId", "")))
            if parsed is None or (paused is not None and parsed[:2] != paused):
                raise ProblemError(
                    ProblemCode.INVALID_FIELD,
                    f"'{where}.interruptId' names no interrupt of this thread's paused run",
                    field=f"{where}.interruptId",
                )
            paused = parsed[:2]
            payload = entry.get("payload")
            resolved = entry.get("status") == "resolved"  # "cancelled": the call is rejected
            approved = resolved and isinstance(payload, dict) and payload.get("approved")
            if resolved and not (isinstance(payload, dict) and isinstance(payload.get("approved"), bool)):
                raise ProblemError(
                    ProblemCode.INVALID_FIELD,
                    f"'{where}.payload' must be {{\"approved\": true|false, \"reason\": ...}}",
                    field=f"{where}.payload",
                )
            decision: dict[str, Any] = {"call_id": parsed[2], "approved": bool(approved)}
            reason = payload.get("reason") if isinstance(payload, dict) else None
            if isinstance(reason, str):
                decision["reason"] = reason
            decisions.append(decision)
        assert paused is not None  # call.resume is not empty
        correlation_id, seq = paused
        user = caller_user(req)
        for decision in decisions:
            try:
                decided = approval_decision(decision)
                await self.api.decide(client, agent, call.thread_id, correlation_id, user, decided)
            except ProblemError as problem:
                if problem.code != ProblemCode.RUN_NOT_AWAITING_APPROVAL:  # a retried resume
                    raise _renamed(problem) from None
        key = StreamKey(agent, call.thread_id, correlation_id)
        opened = await self.api.streams.opened(client, key, seq, user=user)
        if isinstance(opened, StreamEnded):
            return self.api.streams.render(client, opened)
        events = AgUiEvents(call.thread_id, call.run_id, correlation_id)
        return self._response(events, self.api.streams.events(client, opened), resume_at)

    def _response(
        self,
        events: AgUiEvents,
        values: AsyncGenerator[SseEvent, None],
        resume_at: tuple[int, int] | None,
    ) -> StreamingResponse:
        return StreamingResponse(
            _stream(events, values, resume_at),
            media_type=EVENT_STREAM,
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )


def _message_of(event: BaseEvent) -> str | None:
    if isinstance(event, TextMessageContentEvent | TextMessageEndEvent):
        return event.message_id
    return None


async def _stream(
    events: AgUiEvents, values: AsyncGenerator[SseEvent, None], resume_at: tuple[int, int] | None
) -> AsyncIterator[bytes]:
    """The run's events (the values the product's SSE serialises) as AG-UI events: RUN_STARTED
    first on every connection; after `resume_at` only what comes after it (the text message in
    progress started again first)."""
    announced: set[str] = set()
    try:
        yield frame(None if resume_at is not None else "0.0", events.started())
        async for read in values:
            if read.type is None:
                yield b": heartbeat\n\n"
                continue
            seq = read.id or 0
            for n, event in enumerate(events.convert(seq, read.type, read.data)):
                if resume_at is not None and (seq, n) <= resume_at:
                    continue
                if isinstance(event, TextMessageStartEvent):
                    announced.add(event.message_id)
                message = _message_of(event)
                if message is not None and message not in announced:
                    # Resumed inside a message: a client following from here sees it begin.
                    announced.add(message)
                    yield frame(None, TextMessageStartEvent(message_id=message, role="assistant"))
                yield frame(f"{seq}.{n}", event)
                if isinstance(event, _TERMINAL):
                    return
        yield frame(None, events.lost())
    except Exception:
        log.exception("AG-UI stream of %s run %s broke off", events.thread_id, events.run_id)
    finally:
        await values.aclose()
