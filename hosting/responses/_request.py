"""`POST /responses` bodies read into the product's run body, field by field.

Each field the Responses API defines is either mapped onto the run (`model`: the agent; `input`:
the message; `temperature` and `max_output_tokens`: the run's options; `text.format`: its
response format; `previous_response_id` or `conversation`: the session; `user`: the user it acts
for; `stream`, `background`), accepted where its value is what the agent does anyway, or refused
with a 400 naming it: an agent's own instructions, tools and model settings apply, so a caller's
cannot be honoured, and ignoring them silently would answer something else than was asked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ._errors import ResponsesError
from ._ids import RunRef, decode_response_id

_WHY_AGENT = "the agent's own {what} apply; define them on the agent"

ACCEPTED_AS_DEFAULT: dict[str, tuple[Any, ...]] = {
    # field: the values that ask for what the agent does anyway
    "store": (True,),
    "tool_choice": ("auto",),
    "truncation": ("disabled",),
    "parallel_tool_calls": (True,),
}
REFUSED: dict[str, str] = {
    "instructions": _WHY_AGENT.format(what="instructions"),
    "tools": _WHY_AGENT.format(what="tools"),
    "prompt": _WHY_AGENT.format(what="instructions"),
    "reasoning": _WHY_AGENT.format(what="model settings"),
    "top_p": _WHY_AGENT.format(what="model settings"),
    "top_logprobs": "log probabilities are not recorded",
    "max_tool_calls": "the agent's tool rounds are capped by its own settings",
    "include": "no extra output data is recorded",
    "metadata": "a run keeps no metadata",
    "service_tier": _WHY_AGENT.format(what="model settings"),
    "safety_identifier": "send the user the run acts for as 'user'",
    "prompt_cache_key": _WHY_AGENT.format(what="model settings"),
    "prompt_cache_retention": _WHY_AGENT.format(what="model settings"),
    "stream_options": "the stream's events are those of the run",
    "context_management": "the agent's own history settings apply",
}
STORE_FALSE = "every turn of a durable session is stored (that is what makes it durable); omit 'store'"


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str
    input: str | list[dict[str, Any]]
    previous_response_id: str | None = None
    conversation: str | dict[str, Any] | None = None
    stream: bool = False
    background: bool = False
    temperature: float | None = None
    max_output_tokens: int | None = None
    text: dict[str, Any] | None = None
    user: str | None = None


@dataclass(frozen=True)
class CreateCall:
    """A create request read: the agent, the run's values (the product's `RunArgs` fields), and
    how to answer."""

    agent: str
    message: str
    role: str
    session_id: str | None
    options: dict[str, Any]
    response_format: dict[str, Any] | None
    user: str | None
    stream: bool
    background: bool
    continued: RunRef | None
    decisions: tuple[dict[str, Any], ...] = ()
    """`mcp_approval_response` items: the decisions (`call_id`, `approved`, `reason`) on the
    calls of the run `continued` names, sent instead of a turn."""


def parse_create(raw: bytes) -> CreateCall:
    """Read a create body; a `ResponsesError` (400) for anything the agent cannot honour."""
    try:
        data = json.loads(raw) if raw else None
    except (ValueError, UnicodeDecodeError) as error:
        raise ResponsesError(400, f"the body is not JSON: {error}", code="invalid_json") from None
    if not isinstance(data, dict):
        raise ResponsesError(400, "the body must be a JSON object", code="invalid_json")
    _refuse_unhonoured(data)
    try:
        body = _Body.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        param = ".".join(str(p) for p in first["loc"]) or None
        raise ResponsesError(400, f"'{param}': {first['msg']}", param=param, code="invalid_value") from None
    decisions = _decisions(body)
    role, text = ("user", "") if decisions else _message(body.input)
    continued, session_id = _session(body)
    options = {
        k: v
        for k, v in (("temperature", body.temperature), ("max_output_tokens", body.max_output_tokens))
        if v is not None
    }
    return CreateCall(
        body.model,
        text,
        role,
        session_id,
        options,
        _response_format(body.text),
        body.user,
        body.stream,
        body.background,
        continued,
        decisions,
    )


def _decisions(body: _Body) -> tuple[dict[str, Any], ...]:
    """The approval responses of `input`, when it holds only those: each decides one call of the
    paused run `previous_response_id` names (the request items' ids are the call ids)."""
    items = body.input if isinstance(body.input, list) else []
    if not items or any(item.get("type") != "mcp_approval_response" for item in items):
        return ()
    if body.previous_response_id is None:
        raise ResponsesError.invalid(
            "previous_response_id",
            "an approval response decides a call of the paused response that 'previous_response_id' "
            "names; send it",
        )
    if body.stream:
        raise ResponsesError.unsupported(
            "stream", "approval responses are answered as JSON; retrieve to follow"
        )
    decided = []
    for item in items:
        call_id, approve, reason = item.get("approval_request_id"), item.get("approve"), item.get("reason")
        if not isinstance(call_id, str) or not isinstance(approve, bool):
            raise ResponsesError.invalid(
                "input",
                "an mcp_approval_response needs 'approval_request_id' (text) and 'approve' (true or false)",
            )
        decision: dict[str, Any] = {"call_id": call_id, "approved": approve}
        if reason is not None:
            decision["reason"] = reason
        decided.append(decision)
    return tuple(decided)


def _refuse_unhonoured(data: dict[str, Any]) -> None:
    known = set(_Body.model_fields)
    for name, value in data.items():
        if value is None or name in known:
            continue
        if name == "store" and value is False:
            raise ResponsesError.unsupported(name, STORE_FALSE)
        if name in ACCEPTED_AS_DEFAULT:
            if value not in ACCEPTED_AS_DEFAULT[name]:
                raise ResponsesError.unsupported(name, _WHY_AGENT.format(what="settings"))
            continue
        if name in REFUSED:
            if name in ("tools", "include") and value == []:
                continue
            raise ResponsesError.unsupported(name, REFUSED[name])
        raise ResponsesError(400, f"unknown parameter '{name}'", param=name, code="unknown_parameter")


def _message(value: str | list[dict[str, Any]]) -> tuple[Literal["user", "system"], str]:
    """The one message of the turn: text, or one message item of `input_text` parts."""
    if isinstance(value, str):
        return "user", value
    if len(value) != 1:
        raise ResponsesError.invalid(
            "input",
            "send one message per request; the session keeps the conversation (continue it with "
            "'previous_response_id' or 'conversation')",
        )
    item = value[0]
    kind = item.get("type", "message")
    if kind != "message":
        why = (
            "send approval responses on their own, with the paused response's id"
            if kind == "mcp_approval_response"
            else "only message items are accepted"
        )
        raise ResponsesError.invalid("input", f"input items of type {kind!r} are not accepted: {why}")
    role = item.get("role")
    if role not in ("user", "system", "developer"):
        raise ResponsesError.invalid(
            "input", f"a message's role must be user, system or developer (got {role!r})"
        )
    return ("user" if role == "user" else "system"), _content_text(item.get("content"))


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        raise ResponsesError.invalid(
            "input", "a message's content must be text or a list of input_text parts"
        )
    parts = []
    for part in content:
        if (
            not isinstance(part, dict)
            or part.get("type") != "input_text"
            or not isinstance(part.get("text"), str)
        ):
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            raise ResponsesError.invalid(
                "input", f"content parts of type {kind!r} are not accepted; send input_text"
            )
        parts.append(part["text"])
    return "\n".join(parts)


def _session(body: _Body) -> tuple[RunRef | None, str | None]:
    """The response continued (`previous_response_id`) and the session id."""
    if body.previous_response_id is not None and body.conversation is not None:
        raise ResponsesError.invalid(
            "conversation", "send either 'previous_response_id' or 'conversation', not both"
        )
    if body.previous_response_id is not None:
        ref = decode_response_id(body.previous_response_id)
        if ref is None:
            raise ResponsesError(
                404,
                f"no response {body.previous_response_id!r}",
                param="previous_response_id",
                code="response_not_found",
            )
        if ref.agent != body.model:
            raise ResponsesError.invalid(
                "model",
                f"response {body.previous_response_id!r} is of agent {ref.agent!r}, not {body.model!r}",
            )
        return ref, ref.session_id
    conversation = body.conversation
    if isinstance(conversation, dict):
        conversation = conversation.get("id")
    if conversation is not None and not isinstance(conversation, str):
        raise ResponsesError.invalid(
            "conversation", "'conversation' must be an id, or an object with an 'id'"
        )
    return None, conversation


def _response_format(text: dict[str, Any] | None) -> dict[str, Any] | None:
    """`text.format` as the run's response format: `json_schema` becomes the chat completions'
    response format object; `text` is what the agent answers anyway."""
    if not text:
        return None
    extra = sorted(set(text) - {"format"})
    if extra:
        raise ResponsesError.unsupported(f"text.{extra[0]}", _WHY_AGENT.format(what="model settings"))
    fmt = text.get("format")
    if fmt is None or (isinstance(fmt, dict) and fmt.get("type") == "text"):
        return None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        kind = fmt.get("type") if isinstance(fmt, dict) else fmt
        raise ResponsesError.unsupported("text.format", f"format {kind!r}: send 'text' or 'json_schema'")
    schema = fmt.get("schema")
    if not isinstance(schema, dict):
        raise ResponsesError.invalid(
            "text.format.schema", "'text.format.schema' must be a JSON schema object"
        )
    json_schema: dict[str, Any] = {"name": fmt.get("name") or "response", "schema": schema}
    if fmt.get("strict") is not None:
        json_schema["strict"] = fmt["strict"]
    return {"type": "json_schema", "json_schema": json_schema}
