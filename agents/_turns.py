"""What one turn asks (TurnRequest) and what it produced (TurnResult), with their JSON forms."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from state import JSON, AgentResponse, AgentState, ChatMessage, RunRecord, TextContent, Usage

from ._errors import InvalidTurnRequest
from ._structured import ResponseFormat

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
    for this turn. Construction validates everything and raises InvalidTurnRequest.
    """

    correlation_id: str
    messages: list[InputMessage]
    response_format: dict[str, Any] | None = None
    orchestration_id: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

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
class TurnError:
    """Why a turn failed: a stable ``code``, a message, whether a retry may help, the model's HTTP status."""

    code: str
    message: str
    retryable: bool = False
    status: int | None = None

    def to_json(self) -> dict[str, Any]:
        """camelCase JSON."""
        return {
            "code": self.code,
            "message": self.message,
            "retryable": self.retryable,
            "status": self.status,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TurnError:
        """Inverse of ``to_json``."""
        return cls(
            str(data["code"]), str(data.get("message", "")), bool(data.get("retryable")), data.get("status")
        )


def usage_json(usage: Usage | None) -> dict[str, Any] | None:
    """A state Usage as its camelCase wire object."""
    return usage.model_dump(mode="json", by_alias=True, exclude_none=True) if usage is not None else None


def final_text(messages: list[ChatMessage]) -> str:
    """The text of the last assistant message: the turn's answer ("" when it has none)."""
    for message in reversed(messages):
        if message.role == "assistant":
            return "".join(c.text for c in message.contents if isinstance(c, TextContent))
    return ""


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
    error: TurnError | None = None

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
            "error": self.error.to_json() if self.error is not None else None,
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
            error=TurnError.from_json(error) if isinstance(error, Mapping) else None,
        )

    @classmethod
    def from_response(cls, response: AgentResponse, *, structured: bool = False) -> TurnResult:
        """The result recorded by a response entry (``structured``: parse the answer as JSON)."""
        messages = list(response.messages)
        text = final_text(messages)
        error = None
        if response.failed:
            failure = response.failure
            if failure is not None:
                error = TurnError(failure.code, failure.message, failure.retryable, failure.status)
            else:  # a failed turn written before 1.2.0: only error contents
                first = next((c for m in messages for c in m.contents), None)
                error = TurnError(
                    str(getattr(first, "error_code", None) or "model_error"),
                    str(getattr(first, "message", "") or ""),
                )
        parsed: JSON = None
        if structured and error is None and text:
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError:
                parsed = None
        return cls(
            correlation_id=response.correlation_id or "",
            status="failed" if error is not None else "succeeded",
            text=text if error is None else "",
            messages=[m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in messages],
            usage=usage_json(response.usage),
            structured=parsed,
            error=error,
        )

    @classmethod
    def from_state(cls, state: AgentState, correlation_id: str) -> TurnResult | None:
        """The recorded result of run ``correlation_id`` in ``state``, or None if it has not finished."""
        record: RunRecord | None = state.find_run(correlation_id)
        if record is None:
            return None
        wants_json = record.request is not None and record.request.response_type == "json"
        return cls.from_response(record.response, structured=wants_json)
