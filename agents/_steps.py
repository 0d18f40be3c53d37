"""A turn in progress between its steps, and the tool call a tool runs for.

A turn is a sequence of steps: each model call, and each batch of the tool calls one model call
asked for. `TurnProgress` is what the finished steps leave: the messages they produced, the
usage so far, the tool rounds taken and the service's last response id. A host records it
between steps, so a turn interrupted by a crash resumes from its last finished step: a finished
tool call never runs again and a finished model call is not requested again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from state import ChatMessage, Usage


@dataclass
class TurnProgress:
    """The finished steps of one turn (`steps` of them), as a host records them between steps."""

    steps: int = 0
    messages: list[dict[str, Any]] = field(default_factory=list)
    """The messages the finished steps produced, in the state's wire form (camelCase, `$type`)."""
    usage: dict[str, Any] | None = None
    rounds: int = 0
    previous_response_id: str | None = None
    provider_states: dict[str, Any] = field(default_factory=dict)
    """Each context provider's state as the finished steps left it (a tool may change it); the
    state bag gets it when the turn ends, so a failed turn still leaves the bag untouched."""

    def chat_messages(self) -> list[ChatMessage]:
        return [ChatMessage.model_validate(m, by_alias=True, by_name=False) for m in self.messages]

    def usage_model(self) -> Usage | None:
        return None if self.usage is None else Usage.model_validate(self.usage, by_alias=True, by_name=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"steps": self.steps, "messages": self.messages, "rounds": self.rounds}
        if self.usage is not None:
            out["usage"] = self.usage
        if self.previous_response_id is not None:
            out["previousResponseId"] = self.previous_response_id
        if self.provider_states:
            out["providerStates"] = self.provider_states
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TurnProgress:
        """Raises ValueError for a value that is not a recorded progress."""
        steps, rounds, messages = data.get("steps"), data.get("rounds", 0), data.get("messages", [])
        usage, previous = data.get("usage"), data.get("previousResponseId")
        providers = data.get("providerStates", {})
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
            raise ValueError("steps must be a non-negative integer")
        if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 0:
            raise ValueError("rounds must be a non-negative integer")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise ValueError("messages must be a list of messages")
        if usage is not None and not isinstance(usage, dict):
            raise ValueError("usage must be an object")
        if previous is not None and not isinstance(previous, str):
            raise ValueError("previousResponseId must be a string")
        if not isinstance(providers, dict):
            raise ValueError("providerStates must be an object")
        progress = cls(steps, list(messages), usage, rounds, previous, dict(providers))
        progress.chat_messages()  # every message must be one (pydantic raises a ValueError)
        progress.usage_model()
        return progress


