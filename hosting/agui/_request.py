"""A `RunAgentInput` read and checked: the run the product is asked for, or a 400 problem
naming the field the agent cannot honour (nothing is sent or stored)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ag_ui.core import RunAgentInput, UserMessage
from pydantic import ValidationError

from .._errors import ProblemCode, ProblemError

_CAMEL = {"thread_id": "threadId", "run_id": "runId", "forwarded_props": "forwardedProps"}


@dataclass(frozen=True)
class AgUiCall:
    """One AG-UI run: the thread (the session), the run (its correlation id) and the new input."""

    thread_id: str
    run_id: str
    message: str | None
    """The new user text: the user messages after the last message of any other role."""
    resume: tuple[dict[str, Any], ...] = ()
    """Answers to the interrupts (approvals) a previous run of the thread ended with."""


def _refuse(field: str, detail: str) -> ProblemError:
    return ProblemError(ProblemCode.INVALID_FIELD, detail, field=field)


def _text(message: UserMessage, index: int) -> str:
    if isinstance(message.content, str):
        return message.content
    texts = []
    for part in message.content:
        if getattr(part, "type", None) != "text":
            raise _refuse(
                f"messages[{index}].content",
                f"only text parts are taken, not {getattr(part, 'type', None)!r}: the agent reads text",
            )
        texts.append(str(getattr(part, "text", "")))
    return "\n".join(texts)


def new_text(messages: list[Any]) -> str | None:
    """The turn's input: the user messages after the last message of another role, joined by
    newlines (the session keeps what came before; a client sends the whole list every run)."""
    tail: list[tuple[int, UserMessage]] = []
    for index in range(len(messages) - 1, -1, -1):
        if not isinstance(messages[index], UserMessage):
            break
        tail.insert(0, (index, messages[index]))
    if not tail:
        return None
    return "\n".join(_text(message, index) for index, message in tail)


def parse_input(raw: bytes) -> AgUiCall:
    """The run the body asks for; a 400 problem for a malformed one or one the agent cannot honour."""
    try:
        given = RunAgentInput.model_validate_json(raw or b"null")
    except ValidationError as error:
        first = error.errors()[0]
        loc = [_CAMEL.get(str(p), str(p)) for p in first["loc"]]
        field = ".".join(loc) or "body"
        raise _refuse(field, f"not an AG-UI RunAgentInput: {field}: {first['msg']}") from None
    if given.tools:
        raise _refuse(
            "tools",
            "front-end tools are not offered: the agent's own tools apply (a tool that needs a "
            "person's decision pauses the run as an interrupt instead)",
        )
    if given.context:
        raise _refuse("context", "'context' is not offered: the agent's own instructions and providers apply")
    if given.state not in (None, {}):
        raise _refuse("state", "shared 'state' is not offered: the session keeps the conversation")
    if given.forwarded_props not in (None, {}):
        raise _refuse("forwardedProps", "'forwardedProps' are not offered: nothing would read them")
    resume = tuple(entry.model_dump(by_alias=True, exclude_none=True) for entry in given.resume or ())
    message = new_text(list(given.messages))
    if message is None and not resume:
        raise _refuse("messages", "the messages must end with a user message (the new turn's input)")
    return AgUiCall(given.thread_id, given.run_id, message, resume)
