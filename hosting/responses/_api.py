"""The Responses API's handlers: each converts its wire format to typed values for the product's
own API (`run_call` and `Api.submit_run`, so a turn goes through the one submit path: checks,
read, refusals, multitask, stream claim, interrupt mark; `Api.decide`, `Api.cancel`) and the run's
outcome back; nothing else.

A foreground turn is submitted as a waiting run (the run route's own wait, woken by the turn's
end), then its outcome read once; a background one without waiting, answered `queued` at once; a
streamed one as the run's events (hosting.http.RunStreams, as values), each rendered as the
Responses events.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

import azure.functions as func
from openai.types.responses import ResponseItemList
from starlette.responses import Response as StarletteResponse
from starlette.responses import StreamingResponse

from agents import Agent
from state import AgentRequest

from .._errors import ProblemError
from ..client import Answerable, Awaiting, DurableClient, Finished, Pending, read_session, session_entity
from ..http import (
    EVENT_STREAM,
    IDEMPOTENCY_HEADER,
    Api,
    RunAccepted,
    RunArgs,
    RunStreamed,
    SseEvent,
    StreamEnded,
    approval_decision,
    caller_user,
    run_call,
    sse_frame,
)
from ..lifecycle import start_approval_expiry
from ..stored import INTERNAL, Approval, RunApprovals, Viewer
from ..streams import TERMINAL_TYPES
from ._errors import ResponsesError, error_response
from ._ids import RunRef, decode_response_id
from ._render import EventStream, Rendering, input_items
from ._request import CreateCall, parse_create

log = logging.getLogger("hosting.responses")

Answer = func.HttpResponse | StarletteResponse


_CREATE_FIELDS = {
    "message": "input",
    "role": "input",
    "session_id": "conversation",
    "options.temperature": "temperature",
    "options.max_output_tokens": "max_output_tokens",
    "response_format": "text.format",
    "user_id": "user",
}
"""The run body's fields by the create body's names, for the run route's refusals."""


def _json(model: Any, status: int = 200) -> func.HttpResponse:
    return func.HttpResponse(
        model.model_dump_json(exclude_none=True, warnings=False),
        status_code=status,
        mimetype="application/json",
    )


def _run_args(req: func.HttpRequest, call: CreateCall, user: str | None) -> RunArgs:
    """The run a create asks for; a caller's `Idempotency-Key` makes a retry run once."""
    return RunArgs(
        message=call.message,
        role=call.role,
        session_id=call.session_id,
        idempotency_key=req.headers.get(IDEMPOTENCY_HEADER),
        user_id=user,
        wait=not (call.background or call.stream),
        event_stream=call.stream,
        response_format=call.response_format,
        options=call.options,
    )


Handler = Callable[["ResponsesApi", func.HttpRequest, DurableClient], Awaitable[Answer]]


def _answered(handler: Handler) -> Handler:
    """The handler, its refusals answered in the Responses API's error shape (the product's
    problems keep their status and code)."""

    @functools.wraps(handler)
    async def answered(self: ResponsesApi, req: func.HttpRequest, client: DurableClient) -> Answer:
        try:
            return await handler(self, req, client)
        except ResponsesError as error:
            return error_response(error)
        except ProblemError as problem:
            return error_response(ResponsesError.of_problem(problem))

    return answered


class ResponsesApi:
    """The `/responses` routes, bound to the product's API (its agents, settings and streams)."""

    def __init__(self, api: Api) -> None:
        self.api = api

    def _agent(self, name: str, param: str = "model") -> Agent:
        agent = self.api.agents.get(name)
        if agent is None:
            hosted = ", ".join(sorted(self.api.agents))
            raise ResponsesError(
                404,
                f"there is no agent {name!r}; hosted agents: {hosted}",
                param=param,
                code="model_not_found",
            )
        return agent

    def _ref(self, req: func.HttpRequest) -> RunRef:
        value = req.route_params.get("response_id", "")
        ref = decode_response_id(value)
        if ref is None or ref.agent not in self.api.agents:
            raise ResponsesError(
                404, f"no response {value!r}", param="response_id", code="response_not_found"
            )
        return ref

    async def _outcome(self, client: DurableClient, ref: RunRef, user: Viewer, timeout: float) -> Answerable:
        """The run's outcome; its refusals as the API's errors."""
        try:
            return await self.api.run_outcome(
                client, ref.agent, ref.session_id, ref.correlation_id, user, timeout
            )
        except ProblemError as problem:
            raise ResponsesError.of_problem(problem) from None

    async def _known(self, client: DurableClient, ref: RunRef, user: Viewer) -> None:
        """404 unless the run is one the caller may see (Api.run_known)."""
        if not await self.api.run_known(client, ref.agent, ref.session_id, ref.correlation_id, user):
            raise ResponsesError(
                404, f"no response {ref.response_id!r}", param="response_id", code="response_not_found"
            )

    def _render(self, rendering: Rendering, outcome: Answerable) -> func.HttpResponse:
        match outcome:
            case Finished(run=run):
                return _json(rendering.finished(run.result()))
            case Awaiting(approvals=paused):
                return _json(rendering.pending(paused))
            case Pending():
                return _json(rendering.pending(None))

    # -- routes -------------------------------------------------------------------------------

    @_answered
    async def create(self, req: func.HttpRequest, client: DurableClient) -> Answer:
        """POST responses"""
        call = parse_create(req.get_body())
        agent = self._agent(call.agent)
        if call.decisions and call.continued is not None:
            return await self._decide(req, client, call, call.continued)
        try:
            user = caller_user(req, call.user)
            asked = run_call(agent.name, _run_args(req, call, user))
            submitted = await self.api.submit_run(client, agent, asked)
            opened = None
            if isinstance(submitted, RunStreamed):
                opened = await self.api.opened_stream(client, submitted)
        except ProblemError as problem:  # refused: nothing was sent
            refused = ResponsesError.of_problem(problem)
            refused.param = _CREATE_FIELDS.get(refused.param or "", refused.param)
            raise refused from None
        # Answered, accepted or streamed: a failed run is answered from the stored run below.
        ref = RunRef(agent.name, submitted.session_id, submitted.correlation_id)
        previous = None if call.continued is None else call.continued.response_id
        rendering = Rendering(ref, background=call.background, previous_response_id=previous)
        if call.stream and opened is not None and not isinstance(opened, StreamEnded):
            return StreamingResponse(
                self._events(client, ref, rendering, self.api.streams.events(client, opened)),
                media_type=EVENT_STREAM,
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        if call.background and isinstance(submitted, RunAccepted):
            return _json(rendering.pending(None, "queued"))
        # submit_run waited already (or ran out of time: the response is in progress).
        return self._render(rendering, await self._outcome(client, ref, user, 0))

    async def _decide(
        self, req: func.HttpRequest, client: DurableClient, call: CreateCall, ref: RunRef
    ) -> Answer:
        """Approval responses: each is the product's decision on one call of the paused run; the
        answer is that run's response, which goes on once its step's calls are all decided."""
        user = caller_user(req, call.user)
        for decision in call.decisions:
            try:
                await self.api.decide(
                    client, ref.agent, ref.session_id, ref.correlation_id, user, approval_decision(decision)
                )
            except ProblemError as problem:
                raise ResponsesError.of_problem(problem) from None
        rendering = Rendering(ref, background=call.background)
        if call.background:
            return _json(rendering.pending(None))
        return self._render(
            rendering, await self._outcome(client, ref, user, self.api.settings.response_wait_seconds)
        )

    async def _events(
        self,
        client: DurableClient,
        ref: RunRef,
        rendering: Rendering,
        events: AsyncGenerator[SseEvent, None],
    ) -> AsyncIterator[bytes]:
        """The run's own events, one by one, as the Responses events."""
        stream = EventStream(rendering)
        try:
            async with contextlib.aclosing(events):
                for kind, data in stream.started():
                    yield sse_frame(data["sequence_number"], kind, data)
                async for event in events:
                    if event.type is None:
                        yield b": heartbeat\n\n"
                        continue
                    out, ended = await self._converted(client, ref, stream, event)
                    for kind, item in out:
                        yield sse_frame(item["sequence_number"], kind, item)
                    if ended:
                        return
                for kind, item in stream.failed(
                    "stream_ended", "the run's stream ended early; retrieve the response"
                ):
                    yield sse_frame(item["sequence_number"], kind, item)
        except Exception:
            log.exception("responses stream of %s broke off", ref.response_id)

    async def _converted(
        self, client: DurableClient, ref: RunRef, stream: EventStream, event: SseEvent
    ) -> tuple[list[tuple[str, dict[str, Any]]], bool]:
        """One of the run's events as the Responses events, and whether the stream ends with it."""
        kind, data = event.type, event.data
        if kind == "text.delta" and data.get("text"):
            return stream.delta(str(data["text"])), False
        if kind == "approval.required":
            # The stream's approvals are in their public form (hosting.http, as the run shows them).
            shown = [Approval.from_public_json(a) for a in data.get("approvals") or []]
            paused = RunApprovals(shown, int(data.get("step", 0)))
            await start_approval_expiry(client, ref.agent, ref.session_id, ref.correlation_id, paused)
            return list(stream.approvals(paused)), True  # paused: the caller decides, then retrieves
        if kind in TERMINAL_TYPES:
            outcome = await self._outcome(client, ref, INTERNAL, 0)
            if isinstance(outcome, Finished):
                return stream.finished(outcome.run.result()), True
            return stream.failed("stream_ended", "the run's answer could not be read; retrieve it"), True
        return [], False

    @_answered
    async def retrieve(self, req: func.HttpRequest, client: DurableClient) -> Answer:
        """GET responses/{response_id}"""
        ref = self._ref(req)
        user = caller_user(req)
        outcome = await self._outcome(client, ref, user, 0)
        if not isinstance(outcome, Finished):
            await self._known(client, ref, user)
        return self._render(Rendering(ref), outcome)

    @_answered
    async def cancel(self, req: func.HttpRequest, client: DurableClient) -> Answer:
        """POST responses/{response_id}/cancel: the product's cancel, then the run's outcome (a
        queued run ends at once, a running one at its next step)."""
        ref = self._ref(req)
        user = caller_user(req)
        await self.api.cancel(client, ref.agent, ref.session_id, ref.correlation_id, user)
        outcome = await self._outcome(client, ref, user, self.api.settings.response_wait_seconds)
        return self._render(Rendering(ref), outcome)

    @_answered
    async def input_items(self, req: func.HttpRequest, client: DurableClient) -> Answer:
        """GET responses/{response_id}/input_items"""
        ref = self._ref(req)
        user = caller_user(req)
        snapshot = await read_session(client, session_entity(ref.agent, ref.session_id))
        stored = snapshot.stored
        entry = None
        if snapshot.exists and stored.visible_to(user):
            run = stored.find_run(ref.correlation_id)
            entry = run.request if run is not None else stored.request_of(ref.correlation_id)
        if entry is None:
            raise ResponsesError(
                404, f"no response {ref.response_id!r}", param="response_id", code="response_not_found"
            )
        request = AgentRequest.model_validate(entry)
        items = list(reversed(input_items(ref, request)))  # newest first, as the API lists them
        page = ResponseItemList(
            object="list",
            data=items,
            first_id=items[0].id if items else None,
            last_id=items[-1].id if items else None,
            has_more=False,
        )
        return _json(page)
