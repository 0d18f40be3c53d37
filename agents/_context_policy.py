"""What the model sees of a session's history: the agent's context policy.

The stored history is everything, forever; the model context is chosen per turn:

* `TokenBudget(max_tokens)` (the default, `DEFAULT_CONTEXT_TOKENS`): the most recent complete
  turns whose estimated size fits the budget. A turn (its request, tool calls, tool results and
  answer) is kept or dropped whole, so a tool call is never separated from its result.
  Tokens are estimated from the stored text at `CHARS_PER_TOKEN` characters per token of the
  messages' JSON, which overestimates (JSON punctuation counts too): a safe side for a limit.
* `FullHistory()`: every turn, including those archived out of the state (read through the
  `ArchivedHistory` the host passes; chunks are immutable, so the host caches them).

With the `HistoryReducer`, the reducer then bounds and summarizes what the policy chose.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from state import AgentState, replay_turns

from ._errors import AgentConfigurationError

DEFAULT_CONTEXT_TOKENS = 16_000
"""The default budget: far inside every current model's window (8k output and tool schemas fit
beside it), about 64 KB of text, which is more than a session's state keeps by default (it
archives above 48 KiB), so by default the model sees all of the recent history the state holds
and the cost of a turn stays bounded however long the session is."""

CHARS_PER_TOKEN = 4

Message = Mapping[str, Any]


@dataclass(frozen=True)
class TokenBudget:
    """Keep the most recent complete turns within about `max_tokens` estimated tokens."""

    max_tokens: int = DEFAULT_CONTEXT_TOKENS

    def __post_init__(self) -> None:
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise AgentConfigurationError("TokenBudget.max_tokens must be a positive integer")


@dataclass(frozen=True)
class FullHistory:
    """Send every finished turn of the session, archived ones included."""


ContextPolicy = TokenBudget | FullHistory


class ArchivedHistory(Protocol):
    """The entries of a session that were archived out of its state (the host provides it)."""

    async def entries(self) -> Sequence[Mapping[str, Any]]:
        """Every archived entry, oldest first, as stored."""
        ...


def estimate_tokens(messages: Sequence[Message]) -> int:
    """A cheap, conservative token estimate of stored messages."""
    return sum(len(orjson.dumps(m)) for m in messages) // CHARS_PER_TOKEN + 1


async def context_history(
    policy: ContextPolicy, state: AgentState, archive: ArchivedHistory | None
) -> list[Message]:
    """The replayed messages the model sees this turn, oldest first."""
    turns = replay_turns(state.raw_entries())
    if isinstance(policy, FullHistory):
        if archive is not None and state.archived_entries:
            turns = replay_turns(await archive.entries()) + turns
        return [m for turn in turns for m in turn]
    kept: list[list[Message]] = []
    used = 0
    for turn in reversed(turns):
        cost = estimate_tokens(turn)
        if used + cost > policy.max_tokens:
            break
        kept.append(turn)
        used += cost
    return [m for turn in reversed(kept) for m in turn]
