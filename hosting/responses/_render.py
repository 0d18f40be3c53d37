"""Runs as the Responses API's objects, built with the `openai` SDK's own models: a run's outcome
as a `Response`, its request as input items, its event stream as the Responses event stream."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseError,
    ResponseFailedEvent,
    ResponseInProgressEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
    ResponseUsage,
)
from openai.types.responses.response_input_message_item import ResponseInputMessageItem
from openai.types.responses.response_input_text import ResponseInputText
from openai.types.responses.response_output_item import McpApprovalRequest, ResponseOutputItem
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails
from pydantic import BaseModel

from agents import TurnResult
from state import AgentRequest, TextContent

from ..stored import RunApprovals
from ._ids import RunRef

Status = Literal["completed", "failed", "in_progress", "cancelled", "queued", "incomplete"]
CANCELLED_CODE = "run_cancelled"


def message_id(ref: RunRef) -> str:
    """The answer message's item id: the run's, so every reader names it alike."""
    return "msg_" + ref.response_id.removeprefix("resp_")


def _usage(stored: Any) -> ResponseUsage | None:
    if not isinstance(stored, Mapping):
        return None
    counts = [stored.get(k) for k in ("inputTokenCount", "outputTokenCount", "totalTokenCount")]
    given, out, total = (c if isinstance(c, int) else 0 for c in counts)
    return ResponseUsage(
        input_tokens=given,
        output_tokens=out,
        total_tokens=total or given + out,
        input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
        output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
    )


def answer_message(
    ref: RunRef, text: str, status: Literal["in_progress", "completed"]
) -> ResponseOutputMessage:
    parts = (
        [ResponseOutputText(type="output_text", text=text, annotations=[])] if status == "completed" else []
    )
    return ResponseOutputMessage(
        id=message_id(ref), type="message", role="assistant", status=status, content=parts
    )


def approval_items(ref: RunRef, awaiting: RunApprovals) -> list[ResponseOutputItem]:
    """The calls a run waits on, as approval requests (`server_label`: the agent, whose own tools
    they are; the id is the call id the product's approvals route decides)."""
    return [
        McpApprovalRequest(
            type="mcp_approval_request",
            id=approval.call_id,
            name=approval.name,
            arguments=json.dumps(approval.arguments),
            server_label=ref.agent,
        )
        for approval in awaiting.approvals
        if approval.decision is None
    ]


@dataclass
class Rendering:
    """What a `Response` says beside the run's outcome: how it was asked."""

    ref: RunRef
    created_at: float = field(default_factory=time.time)
    background: bool = False
    previous_response_id: str | None = None

    def response(
        self,
        status: Status,
        output: list[ResponseOutputItem] | None = None,
        *,
        error: ResponseError | None = None,
        usage: ResponseUsage | None = None,
    ) -> Response:
        return Response(
            id=self.ref.response_id,
            object="response",
            created_at=self.created_at,
            model=self.ref.agent,
            status=status,
            output=output or [],
            error=error,
            usage=usage,
            background=self.background,
            previous_response_id=self.previous_response_id,
            conversation={"id": self.ref.session_id},
            parallel_tool_calls=False,
            tool_choice="auto",
            tools=[],
        )

    def finished(self, result: TurnResult) -> Response:
        """A finished run: completed with its answer, cancelled, or failed with its code."""
        usage = _usage(result.usage)
        failure = result.error
        if failure is None:
            return self.response(
                "completed", [answer_message(self.ref, result.text, "completed")], usage=usage
            )
        status: Status = "cancelled" if failure.code == CANCELLED_CODE else "failed"
        return self.response(status, error=_error(failure.code, failure.message), usage=usage)

    def pending(self, awaiting: RunApprovals | None, status: Status = "in_progress") -> Response:
        items = [] if awaiting is None else approval_items(self.ref, awaiting)
        return self.response(status, items)


def _error(code: str, message: str | None) -> ResponseError:
    # The SDK's model lists OpenAI's codes; a run's own (a model's, or the host's) is kept as is.
    return ResponseError.model_construct(code=cast(Any, code), message=message or code)


def input_items(ref: RunRef, request: AgentRequest) -> list[ResponseInputMessageItem]:
    """A run's request entry as the input items it was sent as."""
    items = []
    for index, message in enumerate(request.messages):
        texts = [
            ResponseInputText(type="input_text", text=c.text)
            for c in message.contents
            if isinstance(c, TextContent)
        ]
        role: Literal["user", "system"] = "user" if message.role == "user" else "system"
        item_id = f"msg_in_{index}_" + ref.response_id.removeprefix("resp_")
        items.append(
            ResponseInputMessageItem(id=item_id, type="message", role=role, status="completed", content=texts)
        )
    return items


class EventStream:
    """The Responses events of one run, numbered, from the run's own events."""

    def __init__(self, rendering: Rendering) -> None:
        self.rendering = rendering
        self.sequence = 0
        self.text: list[str] | None = None  # the answer so far, once its message item is open

    def _event(self, model: type[BaseModel], kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
        """One event of the SDK's `model`, numbered (`sequence_number` counts from 0)."""
        event = model(type=kind, sequence_number=self.sequence, **fields)
        self.sequence += 1
        return kind, event.model_dump(mode="json", exclude_none=True, warnings=False)

    def _in_text(self) -> dict[str, Any]:
        """Where the answer's text is: the message item's one output_text part."""
        return {"output_index": 0, "content_index": 0, "item_id": message_id(self.rendering.ref)}

    def started(self) -> list[tuple[str, dict[str, Any]]]:
        response = self.rendering.response("in_progress")
        return [
            self._event(ResponseCreatedEvent, "response.created", response=response),
            self._event(ResponseInProgressEvent, "response.in_progress", response=response),
        ]

    def _open_message(self) -> list[tuple[str, dict[str, Any]]]:
        self.text = []
        empty = ResponseOutputText(type="output_text", text="", annotations=[])
        return [
            self._event(
                ResponseOutputItemAddedEvent,
                "response.output_item.added",
                output_index=0,
                item=answer_message(self.rendering.ref, "", "in_progress"),
            ),
            self._event(
                ResponseContentPartAddedEvent, "response.content_part.added", part=empty, **self._in_text()
            ),
        ]

    def delta(self, text: str) -> list[tuple[str, dict[str, Any]]]:
        events = self._open_message() if self.text is None else []
        assert self.text is not None
        self.text.append(text)
        events.append(
            self._event(
                ResponseTextDeltaEvent,
                "response.output_text.delta",
                delta=text,
                logprobs=[],
                **self._in_text(),
            )
        )
        return events

    def approvals(self, awaiting: RunApprovals) -> list[tuple[str, dict[str, Any]]]:
        """A paused run: its calls as approval request items (the stream then ends; see the docs)."""
        events = []
        first = 1 if self.text is not None else 0
        for index, item in enumerate(approval_items(self.rendering.ref, awaiting), start=first):
            for model, kind in (
                (ResponseOutputItemAddedEvent, "response.output_item.added"),
                (ResponseOutputItemDoneEvent, "response.output_item.done"),
            ):
                events.append(self._event(model, kind, output_index=index, item=item))
        return events

    def finished(self, result: TurnResult) -> list[tuple[str, dict[str, Any]]]:
        response = self.rendering.finished(result)
        if response.status != "completed":
            return [self._event(ResponseFailedEvent, "response.failed", response=response)]
        events = self._open_message() if self.text is None else []
        # The stored answer: what a retrieve returns, even where a restarted step streamed twice.
        text = result.text
        part = ResponseOutputText(type="output_text", text=text, annotations=[])
        item = answer_message(self.rendering.ref, text, "completed")
        return [
            *events,
            self._event(
                ResponseTextDoneEvent, "response.output_text.done", text=text, logprobs=[], **self._in_text()
            ),
            self._event(
                ResponseContentPartDoneEvent, "response.content_part.done", part=part, **self._in_text()
            ),
            self._event(ResponseOutputItemDoneEvent, "response.output_item.done", output_index=0, item=item),
            self._event(ResponseCompletedEvent, "response.completed", response=response),
        ]

    def failed(self, code: str, message: str) -> list[tuple[str, dict[str, Any]]]:
        """The run ended without a stored result this stream could read (an outage): failed."""
        response = self.rendering.response("failed", error=_error(code, message))
        return [self._event(ResponseFailedEvent, "response.failed", response=response)]
