"""MemoryProvider: facts the model keeps per session with remember / recall / forget tools."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ._context import ContextAdditions, ContextProvider, ProviderContext
from ._errors import AgentConfigurationError
from ._tools import FunctionTool


class Fact(BaseModel):
    """One remembered fact."""

    model_config = ConfigDict(extra="allow")

    id: str
    text: str


class MemoryState(BaseModel):
    """A session's memory as stored in the state bag: ``{"facts": [{"id", "text"}], "nextId": n}``."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    facts: list[Fact] = Field(default_factory=list)
    next_id: int = Field(default=1, alias="nextId", ge=1)


def _memory(ctx: ProviderContext) -> MemoryState:
    """The session's memory, created on first use (the loader validated a stored one)."""
    if ctx.state is None:
        ctx.state = MemoryState()
    memory: MemoryState = ctx.state
    return memory


def _words(text: str) -> set[str]:
    return {w for w in "".join(ch.lower() if ch.isalnum() else " " for ch in text).split() if len(w) > 2}


class MemoryProvider(ContextProvider):
    """Lets the model remember facts about the session and shows them to it every turn.

    Per-session state (in the state bag under ``source_id``): ``MemoryState``,
    ``{"facts": [{"id", "text"}], "nextId": int}``. At most ``max_facts`` are kept (the oldest go
    first).
    """

    state_model = MemoryState

    def __init__(self, source_id: str = "memory", *, max_facts: int = 100) -> None:
        super().__init__(source_id)
        if max_facts < 1:
            raise AgentConfigurationError("MemoryProvider.max_facts must be positive")
        self.max_facts = max_facts
        self.tools = (
            FunctionTool.from_function(self.remember),
            FunctionTool.from_function(self.recall),
            FunctionTool.from_function(self.forget),
        )

    async def remember(self, fact: str, ctx: ProviderContext) -> str:
        """Remember a fact about the user or the conversation for later turns.

        Args:
            fact: The fact to remember, as a short self-contained sentence.
        """
        text = " ".join(fact.split())
        if not text:
            return "Nothing to remember: the fact is empty."
        memory = _memory(ctx)
        for existing in memory.facts:
            if existing.text.lower() == text.lower():
                return f"Already remembered as {existing.id}."
        fact_id = f"m{memory.next_id}"
        memory.next_id += 1
        memory.facts.append(Fact(id=fact_id, text=text))
        del memory.facts[: max(0, len(memory.facts) - self.max_facts)]
        return f"Remembered as {fact_id}."

    async def recall(self, ctx: ProviderContext, query: str = "") -> list[dict[str, Any]]:
        """Look up remembered facts that share words with the query (an empty query lists all).

        Args:
            query: Words to look for.
        """
        facts = _memory(ctx).facts
        wanted = _words(query)
        return [f.model_dump() for f in facts if not wanted or wanted & _words(f.text)]

    async def forget(self, fact_id: str, ctx: ProviderContext) -> str:
        """Forget a remembered fact.

        Args:
            fact_id: The id of the fact (as shown in the instructions or by recall), e.g. "m3".
        """
        memory = _memory(ctx)
        kept = [f for f in memory.facts if f.id != fact_id.strip()]
        if len(kept) == len(memory.facts):
            return f"No fact with id {fact_id!r}."
        memory.facts = kept
        return f"Forgot {fact_id.strip()}."

    async def before_model(self, context: ProviderContext) -> ContextAdditions:
        """Put the remembered facts into the instructions."""
        facts = _memory(context).facts if context.state is not None else []
        lines = [
            "You have a memory for this conversation: use the remember tool to keep facts the user "
            "tells you that will matter later, recall to look them up and forget when told to."
        ]
        if facts:
            lines.append("What you remember:")
            lines.extend(f"- [{f.id}] {f.text}" for f in facts)
        return ContextAdditions(instructions=["\n".join(lines)])
