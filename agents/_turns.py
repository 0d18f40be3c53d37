"""What one turn asks (TurnRequest) and what it produced (TurnResult), with their JSON forms."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from state import JSON, AgentState, ChatMessage, RunRecord, TurnFailure, response_failed

from ._errors import InvalidTurnRequest
from ._structured import ResponseFormat, read_json_answer
from ._trace_context import clean_trace_context

TurnStatus = Literal["succeeded", "failed"]
InputRole = Literal["user", "system", "assistant"]
_ROLES = ("user", "system", "assistant")
MAX_CORRELATION_ID = 256


@dataclass(frozen=True)
class InputMessage:
    """One message of a turn request: ``role`` (user, system or assistant) and its text."""

    role: InputRole
    text: str
    author_name: str | None = None

    def __post_init__(self) -> None:
        if self.role not in _ROLES:
            raise InvalidTurnRequest("role", f"must be one of {', '.join(_ROLES)}, not {self.role!r}")
        if not isinstance(self.text, str):
            raise InvalidTurnRequest("message", "must be a string")
        if self.author_name is not None and not isinstance(self.author_name, str):
            raise InvalidTurnRequest("author_name", "must be a string")


@dataclass(frozen=True)
class TurnRequest:
    """One turn: the new messages, a correlation id, and optionally a JSON response format.

    ``response_format`` is a JSON schema (or an OpenAI ``response_format`` object) and overrides
    the agent's. ``options`` may set ``temperature``, ``max_output_tokens`` and ``max_tool_rounds``
    for this turn. ``trace_context`` is the W3C trace context (``traceparent``, ``tracestate``) of
    whoever asked for the turn, carried across the durable hop so the turn's spans join its trace;
    it is not part of what the request asks (its hash). Construction validates everything and
    raises InvalidTurnRequest.
    """

    correlation_id: str
    messages: list[InputMessage]
    response_format: dict[str, Any] | None = None
    orchestration_id: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    trace_context: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        cid = self.correlation_id
        if not isinstance(cid, str) or not cid.strip() or len(cid) > MAX_CORRELATION_ID:
            raise InvalidTurnRequest(
                "correlation_id", f"must be a non-empty string of at most {MAX_CORRELATION_ID}"
            )
        if not isinstance(self.messages, list) or not self.messages:
            raise InvalidTurnRequest("messages", "at least one message is needed")
        for message in self.messages:
            if not isinstance(message, InputMessage):
                raise InvalidTurnRequest("messages", "items must be InputMessage")
        if not any(m.text.strip() for m in self.messages):
            raise InvalidTurnRequest("message", "must not be empty")
        if self.response_format is not None:
            try:
                ResponseFormat.parse(self.response_format)
            except ValueError as exc:
                raise InvalidTurnRequest("response_format", str(exc)) from None
        if self.orchestration_id is not None and not isinstance(self.orchestration_id, str):
            raise InvalidTurnRequest("orchestration_id", "must be a string")
        if not isinstance(self.options, dict):
            raise InvalidTurnRequest("options", "must be an object")
        _check_options(self.options)
        if self.trace_context is not None:
            if not isinstance(self.trace_context, Mapping):
                raise InvalidTurnRequest("trace_context", "must be an object")
            # Only what a trace context holds is kept; a malformed one never fails a turn.
            object.__setattr__(self, "trace_context", clean_trace_context(self.trace_context))

    def to_json(self) -> dict[str, Any]:
        """camelCase JSON (e.g. an entity operation's input)."""
        out: dict[str, Any] = {
            "correlationId": self.correlation_id,
            "messages": [
                {"role": m.role, "text": m.text, **({"authorName": m.author_name} if m.author_name else {})}
                for m in self.messages
            ],
        }
        if self.response_format is not None:
            out["responseFormat"] = self.response_format
        if self.orchestration_id is not None:
            out["orchestrationId"] = self.orchestration_id
        if self.options:
            out["options"] = self.options
        if self.trace_context:
            out["traceContext"] = self.trace_context
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TurnRequest:
        """Inverse of ``to_json``; InvalidTurnRequest names the bad field."""
        if not isinstance(data, Mapping):
            raise InvalidTurnRequest("(body)", "must be an object")
        raw_messages = data.get("messages")
        if not isinstance(raw_messages, list):
            raise InvalidTurnRequest("messages", "must be a list")
        messages = []
        for item in raw_messages:
            if not isinstance(item, Mapping):
                raise InvalidTurnRequest("messages", "items must be objects")
            messages.append(InputMessage(item.get("role", "user"), item.get("text"), item.get("authorName")))  # type: ignore[arg-type]
        response_format = data.get("responseFormat")
        if response_format is not None and not isinstance(response_format, dict):
            raise InvalidTurnRequest("response_format", "must be an object")
        return cls(
            correlation_id=data.get("correlationId"),  # type: ignore[arg-type]
            messages=messages,
            response_format=response_format,
            orchestration_id=data.get("orchestrationId"),
            options=dict(data.get("options") or {}),
            trace_context=clean_trace_context(data.get("traceContext")),
        )


def _check_options(options: Mapping[str, Any]) -> None:
    temperature = options.get("temperature")
    if temperature is not None and (
        not isinstance(temperature, (int, float))
        or isinstance(temperature, bool)
        or not 0 <= temperature <= 2
    ):
        raise InvalidTurnRequest("options.temperature", "must be a number between 0 and 2")
    for key in ("max_output_tokens", "max_tool_rounds"):
        value = options.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise InvalidTurnRequest(f"options.{key}", "must be a positive integer")


@dataclass(frozen=True)
class TurnResult:
    """The outcome of one turn: status, answer text, the response messages (state wire format),
    usage, the parsed structured answer (or None) and, for a failed turn, ``error``.
    """

    correlation_id: str
    status: TurnStatus
    text: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    structured: JSON = None
    error: TurnFailure | None = None

    @property
    def succeeded(self) -> bool:
        """True for a successful turn."""
        return self.status == "succeeded"

    def to_json(self) -> dict[str, Any]:
        """``{"correlationId", "status", "text", "messages", "usage", "structured", "error"}``."""
        return {
            "correlationId": self.correlation_id,
            "status": self.status,
            "text": self.text,
            "messages": self.messages,
            "usage": self.usage,
            "structured": self.structured,
            "error": self.error.model_dump(mode="json") if self.error is not None else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TurnResult:
        """Inverse of ``to_json``."""
        status = data.get("status")
        if status not in ("succeeded", "failed"):
            raise ValueError(f"status must be 'succeeded' or 'failed', not {status!r}")
        error = data.get("error")
        return cls(
            correlation_id=str(data["correlationId"]),
            status=status,
            text=str(data.get("text") or ""),
            messages=list(data.get("messages") or []),
            usage=data.get("usage"),
            structured=data.get("structured"),
            error=TurnFailure.model_validate(error) if isinstance(error, Mapping) else None,
        )

    @classmethod
    def from_state(cls, state: AgentState, correlation_id: str) -> TurnResult | None:
        """The recorded result of run ``correlation_id`` in ``state``, or None if it has not finished."""
        record: RunRecord | None = state.find_run(correlation_id)
        if record is None:
            return None
        assert record.response_wire is not None
        return turn_result(correlation_id, record.request_wire, record.response_wire)


def _text_of(message: Mapping[str, Any]) -> str:
    return "".join(
        c.get("text") or ""
        for c in message.get("contents") or ()
        if isinstance(c, Mapping) and c.get("$type") == "text"
    )


def answer_text(messages: Sequence[ChatMessage | Mapping[str, Any]]) -> str:
    """A turn's answer: the text of its last assistant message ("" when that message has none).

    An earlier assistant message's text ("let me look that up") is not the answer. Takes the
    messages as models (a turn in progress) or as stored wire dicts.
    """
    for message in reversed(messages):
        if isinstance(message, ChatMessage):
            if message.role == "assistant":
                return message.text
        elif message.get("role") == "assistant":
            return _text_of(message)
    return ""


def stored_failure(response: Mapping[str, Any]) -> TurnFailure | None:
    """Why a stored response entry failed, or None when it did not."""
    failure = response.get("failure")
    if isinstance(failure, Mapping):
        return TurnFailure.model_validate(failure)
    if not response_failed(response):
        return None
    # A failed turn written before 1.2.0: only error contents to go on.
    first: Mapping[str, Any] = next(
        (c for m in response.get("messages") or () for c in m.get("contents") or ()), {}
    )
    return TurnFailure(
        code=str(first.get("errorCode") or "model_error"), message=str(first.get("message") or "")
    )


def turn_result(
    correlation_id: str, request: Mapping[str, Any] | None, response: Mapping[str, Any]
) -> TurnResult:
    """A finished turn's result, computed from its stored entries (camelCase wire dicts).

    The one place a result is made: the entity answering a run, an orchestration's `call_entity`
    and the HTTP API reading a run all come here, so they agree on every field.
    """
    messages = list(response.get("messages") or ())
    failure = stored_failure(response)
    text = "" if failure is not None else answer_text(messages)
    structured: JSON = None
    if failure is None and text and request is not None and request.get("responseType") == "json":
        with contextlib.suppress(ValueError, RecursionError):
            structured = read_json_answer(text)
    return TurnResult(
        correlation_id=correlation_id,
        status="failed" if failure is not None else "succeeded",
        text=text,
        messages=messages,
        usage=response.get("usage"),
        structured=structured,
        error=failure,
    )
