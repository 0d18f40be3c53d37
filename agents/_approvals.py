"""Tool calls that wait for a person's decision (`tool(requires_approval=...)`).

A step of tool calls in which a call needs approval and has no decision yet does not run: the
step answers `AwaitingApproval` (the calls waiting), and the host records them and runs the step
again once every one is decided (docs/hosting.md "Tool approvals"). The whole batch waits, the
calls that need no approval included, so a step's calls still run together and their results
still make one tool message, exactly as in a step that needed no approval. A rejected call does
not run: the model gets a tool result saying so, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from state import FunctionCallContent, FunctionResultContent

from ._convert import RAW_ARGUMENTS
from ._steps import TurnProgress
from ._tools import FunctionTool
from ._unicode import without_lone_surrogates

NO_HOST_REASON = "this run cannot wait for a decision (it runs without steps)"
"""Why a call that needs approval is rejected in a turn run in one piece (`Agent.run`)."""


@dataclass(frozen=True)
class ToolDecision:
    """A person's decision on one call: run it (approved) or not, and why."""

    approved: bool
    reason: str | None = None


@dataclass(frozen=True)
class PendingCall:
    """One call waiting for a decision: its id, tool name and arguments."""

    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class AwaitingApproval:
    """A step that did not run: `calls` wait for decisions; `progress` is unchanged."""

    progress: TurnProgress
    calls: list[PendingCall]


def undecided_calls(
    calls: Sequence[FunctionCallContent],
    tools: Mapping[str, FunctionTool],
    decisions: Mapping[str, ToolDecision],
) -> list[PendingCall]:
    """The calls of a step that need approval and have no decision. A call the tool step fails
    anyway (unknown tool, unreadable arguments) needs none: it never runs."""
    out = []
    for call in calls:
        tool = tools.get(call.name)
        if tool is None or isinstance((call.model_extra or {}).get(RAW_ARGUMENTS), str):
            continue
        arguments = dict(call.arguments or {})
        if call.call_id not in decisions and tool.needs_approval(arguments):
            out.append(PendingCall(call.call_id, call.name, arguments))
    return out


def rejected_result(call: FunctionCallContent, reason: str | None) -> FunctionResultContent:
    """The tool result the model gets for a rejected call, with the reason when one was given."""
    text = f"Rejected: the call of tool {call.name!r} was not approved, so it did not run."
    if reason:
        text += f" Reason: {reason}"
    return FunctionResultContent(
        call_id=call.call_id, result=without_lone_surrogates(text, "a rejection"), isError=True
    )
