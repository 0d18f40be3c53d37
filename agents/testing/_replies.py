"""What the model server answers (`Reply`) and what it was asked (`ModelRequest`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

ReplyKind = Literal["message", "error", "delay", "hang", "disconnect", "raw"]
FinishReason = Literal["stop", "length", "tool_calls", "content_filter"]
Interruption = Literal["error", "disconnect"]

# OpenAI's error `type` per HTTP status, so clients that branch on it see familiar values.
_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_error",
    404: "invalid_request_error",
    408: "timeout_error",
    409: "conflict_error",
    422: "invalid_request_error",
    429: "requests",
    500: "server_error",
    502: "server_error",
    503: "server_error",
    504: "server_error",
}
_ERROR_MESSAGES: dict[int, str] = {
    400: "Invalid request.",
    401: "Incorrect API key provided.",
    403: "You are not allowed to access this resource.",
    404: "The requested resource does not exist.",
    408: "Request timed out.",
    409: "Conflict.",
    422: "Unprocessable entity.",
    429: "Rate limit reached for requests. Please try again later.",
    500: "The server had an error while processing your request.",
    502: "Bad gateway.",
    503: "The engine is currently overloaded, please try again later.",
    504: "Gateway timeout.",
}
_ERROR_CODES: dict[int, str] = {401: "invalid_api_key", 429: "rate_limit_exceeded", 500: "server_error"}


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asks for; `arguments` is the raw JSON text sent on the wire."""

    name: str
    arguments: str
    call_id: str | None = None

    @property
    def parsed_arguments(self) -> Any:
        """The arguments decoded as JSON (raises `json.JSONDecodeError` when malformed)."""
        return json.loads(self.arguments)


@dataclass(frozen=True)
class UsageOverride:
    """Token counts a reply reports instead of the server's deterministic word counts."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None


@dataclass(frozen=True)
class ErrorSpec:
    """An HTTP error answered in OpenAI's `{"error": {...}}` body shape."""

    status: int
    message: str
    type: str
    code: str | None
    param: str | None
    retry_after: float | None
    headers: Mapping[str, str] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def _call_from(item: ToolCall | tuple[Any, ...] | Mapping[str, Any]) -> ToolCall:
    if isinstance(item, ToolCall):
        return item
    if isinstance(item, Mapping):
        return _make_call(str(item["name"]), item.get("arguments", {}), item.get("call_id"))
    if isinstance(item, tuple) and len(item) in (2, 3):
        return _make_call(str(item[0]), item[1], item[2] if len(item) == 3 else None)
    raise TypeError(f"a tool call is a ToolCall, a (name, args[, call_id]) tuple or a mapping, not {item!r}")


def _make_call(name: str, args: Any, call_id: Any) -> ToolCall:
    if not name:
        raise ValueError("a tool call needs a function name")
    raw = args if isinstance(args, str) else json.dumps(args)
    return ToolCall(name=name, arguments=raw, call_id=None if call_id is None else str(call_id))


@dataclass(frozen=True)
class Reply:
    """One scripted model answer. Build it with the class methods (`Reply.text(...)` etc.)."""

    kind: ReplyKind
    content: str | None = None
    calls: tuple[ToolCall, ...] = ()
    reasoning_text: str | None = None
    finish_reason: FinishReason | None = None
    failure: ErrorSpec | None = None
    seconds: float = 0.0
    then: Reply | None = None
    usage: UsageOverride | None = None
    interrupt_after: int | None = None
    interruption: Interruption = "error"

    # -- constructors -------------------------------------------------------------------------

    @classmethod
    def text(cls, content: str, *, finish_reason: FinishReason = "stop") -> Reply:
        """A plain assistant text answer."""
        return cls(kind="message", content=content, finish_reason=finish_reason)

    @classmethod
    def json(cls, obj: Any) -> Reply:
        """A structured-output answer: `obj` (JSON data or a pydantic model) serialised as the text."""
        dump = getattr(obj, "model_dump_json", None)
        text = dump() if callable(dump) else json.dumps(obj)
        return cls(kind="message", content=text, finish_reason="stop")

    @classmethod
    def tool_call(cls, name: str, args: Mapping[str, Any] | None = None, call_id: str | None = None) -> Reply:
        """The model asks for one function call (`args` is JSON-serialised)."""
        return cls.tool_calls([_make_call(name, dict(args or {}), call_id)])

    @classmethod
    def tool_calls(
        cls,
        calls: Iterable[ToolCall | tuple[Any, ...] | Mapping[str, Any]],
        *,
        text: str | None = None,
    ) -> Reply:
        """The model asks for several function calls at once (parallel calls), optionally with text."""
        made = tuple(_call_from(c) for c in calls)
        if not made:
            raise ValueError("Reply.tool_calls needs at least one call")
        return cls(kind="message", content=text, calls=made, finish_reason="tool_calls")

    @classmethod
    def malformed_tool_call(cls, name: str, raw_args_text: str, call_id: str | None = None) -> Reply:
        """A function call whose arguments text is sent verbatim (typically not valid JSON)."""
        return cls(
            kind="message",
            calls=(ToolCall(name=name, arguments=raw_args_text, call_id=call_id),),
            finish_reason="tool_calls",
        )

    @classmethod
    def error(
        cls,
        status: int,
        message: str | None = None,
        *,
        code: str | None = None,
        type: str | None = None,
        param: str | None = None,
        retry_after: float | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """An HTTP error; `retry_after` (seconds) sets `Retry-After` and `retry-after-ms` headers."""
        if not 400 <= status <= 599:
            raise ValueError(f"an error reply needs a 4xx or 5xx status, not {status}")
        if retry_after is not None and retry_after < 0:
            raise ValueError("retry_after must not be negative")
        spec = ErrorSpec(
            status=status,
            message=message or _ERROR_MESSAGES.get(status, f"HTTP {status}"),
            type=type
            or _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error"),
            code=code if code is not None else _ERROR_CODES.get(status),
            param=param,
            retry_after=retry_after,
            headers=dict(headers or {}),
        )
        return cls(kind="error", failure=spec)

    @classmethod
    def delay(cls, seconds: float, then: Reply | None = None) -> Reply:
        """Wait `seconds` before answering with `then` (default: the offline answer)."""
        if seconds < 0:
            raise ValueError("a delay must not be negative")
        return cls(kind="delay", seconds=seconds, then=then)

    @classmethod
    def hang(cls) -> Reply:
        """Never answer: the request stays open until the client gives up or the server stops."""
        return cls(kind="hang")

    @classmethod
    def raw(cls, body: str) -> Reply:
        """Answer 200 ``application/json`` with exactly ``body``: a truncated or wrongly shaped answer."""
        return cls(kind="raw", content=body)

    @classmethod
    def disconnect(cls) -> Reply:
        """Drop the connection without any HTTP response (the client sees a connection error)."""
        return cls(kind="disconnect")

    @classmethod
    def reasoning(cls, text: str, then: Reply | None = None) -> Reply:
        """Reasoning content followed by `then` (default: an empty text answer)."""
        base = then or cls.text("")
        if base.kind != "message":
            raise ValueError("reasoning can only precede a message reply (text or tool calls)")
        return replace(base, reasoning_text=text)

    # -- modifiers ----------------------------------------------------------------------------

    def with_usage(
        self,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        reasoning_tokens: int | None = None,
    ) -> Reply:
        """The same reply reporting these token counts instead of the computed ones."""
        return replace(self, usage=UsageOverride(input_tokens, output_tokens, reasoning_tokens))

    def interrupted(self, after: int, how: Interruption = "error") -> Reply:
        """The same reply, streamed, breaking off after `after` chunks / events: ``"error"`` sends
        the service's in-stream error (Chat Completions: a `data: {"error": ...}` chunk; Responses:
        an `error` event, type `server_error`) and ends the stream; ``"disconnect"`` drops the
        connection. A non-streamed request gets the whole reply."""
        if self.kind != "message":
            raise ValueError("only a message reply (text or tool calls) can be interrupted")
        if after < 0:
            raise ValueError("'after' must not be negative")
        return replace(self, interrupt_after=after, interruption=how)


@dataclass(frozen=True)
class Message:
    """A conversation message normalised across both wire APIs.

    `role` is system, developer, user, assistant or tool; `text` joins the text parts; an assistant
    message carries its `tool_calls`; a tool message its `call_id` and (when known) tool `name`.
    """

    role: str
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class ToolSpec:
    """A function tool offered to the model."""

    name: str
    description: str | None
    parameters: dict[str, Any]
    strict: bool | None = None


@dataclass
class ModelRequest:
    """One model call as the server received it (kept in `ModelServer.requests`).

    For the Responses API with `previous_response_id`, `messages` include the stored earlier turns
    (without their instructions, as the service does).
    """

    api: Literal["chat", "responses"]
    body: dict[str, Any]
    messages: list[Message]
    tools: list[ToolSpec]
    path: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    disconnected: bool = False

    @property
    def model(self) -> str:
        return str(self.body.get("model") or "")

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def last_user_text(self) -> str | None:
        """Text of the last user message, or None when there is none."""
        for message in reversed(self.messages):
            if message.role == "user":
                return message.text
        return None

    @property
    def tool_names(self) -> list[str]:
        return [tool.name for tool in self.tools]

    @property
    def response_format(self) -> dict[str, Any] | None:
        """`{"type": "json_schema", "name", "schema", "strict"}`, `{"type": "json_object"}` or None."""
        if self.api == "chat":
            fmt = self.body.get("response_format")
            if not isinstance(fmt, dict) or fmt.get("type") in (None, "text"):
                return None
            if fmt.get("type") == "json_schema":
                inner = fmt.get("json_schema") or {}
                return {"type": "json_schema", **inner}
            return dict(fmt)
        text = self.body.get("text")
        fmt = text.get("format") if isinstance(text, dict) else None
        if not isinstance(fmt, dict) or fmt.get("type") in (None, "text"):
            return None
        return dict(fmt)

    @property
    def max_output_tokens(self) -> int | None:
        keys: Sequence[str] = (
            ("max_completion_tokens", "max_tokens") if self.api == "chat" else ("max_output_tokens",)
        )
        for key in keys:
            value = self.body.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None
