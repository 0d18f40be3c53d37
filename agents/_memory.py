"""MemoryProvider: facts the model keeps per session with remember / recall / forget tools."""

from __future__ import annotations

from typing import Any

from ._context import ContextAdditions, ContextProvider, ProviderContext
from ._errors import AgentConfigurationError
from ._tools import FunctionTool


def _facts(ctx: ProviderContext) -> list[dict[str, Any]]:
    """The session's facts, creating the state on first use: ``{"facts": [...], "nextId": n}``.

    A stored value of another shape is refused (the turn fails), never silently replaced.
    """
    if ctx.state is None:
        ctx.state = {"facts": [], "nextId": 1}
    state = ctx.state
    if not isinstance(state, dict) or not isinstance(state.get("facts"), list):
        raise ValueError(f"the memory state has an unexpected shape: {str(state)[:100]}")
    facts: list[dict[str, Any]] = state["facts"]
    return facts


def _words(text: str) -> set[str]:
    return {w for w in "".join(ch.lower() if ch.isalnum() else " " for ch in text).split() if len(w) > 2}


class MemoryProvider(ContextProvider):
    """Lets the model remember facts about the session and shows them to it every turn.

    Per-session state (in the state bag under ``source_id``): ``{"facts": [{"id", "text"}],
    "nextId": int}``. At most ``max_facts`` are kept (the oldest go first).
    """

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
        facts = _facts(ctx)
        for existing in facts:
            if existing.get("text", "").lower() == text.lower():
                return f"Already remembered as {existing['id']}."
        state = ctx.state
        assert isinstance(state, dict)
        fact_id = f"m{int(state.get('nextId', 1))}"
        state["nextId"] = int(state.get("nextId", 1)) + 1
        facts.append({"id": fact_id, "text": text})
        del facts[: max(0, len(facts) - self.max_facts)]
        return f"Remembered as {fact_id}."

    async def recall(self, ctx: ProviderContext, query: str = "") -> list[dict[str, Any]]:
        """Look up remembered facts that share words with the query (an empty query lists all).

        Args:
            query: Words to look for.
        """
        facts = _facts(ctx)
        wanted = _words(query)
        if not wanted:
            return [dict(f) for f in facts]
        return [dict(f) for f in facts if wanted & _words(str(f.get("text", "")))]

    async def forget(self, fact_id: str, ctx: ProviderContext) -> str:
        """Forget a remembered fact.

        Args:
            fact_id: The id of the fact (as shown in the instructions or by recall), e.g. "m3".
        """
        facts = _facts(ctx)
        kept = [f for f in facts if f.get("id") != fact_id.strip()]
        if len(kept) == len(facts):
            return f"No fact with id {fact_id!r}."
        facts[:] = kept
        return f"Forgot {fact_id.strip()}."

    async def before_model(self, context: ProviderContext) -> ContextAdditions:
        """Put the remembered facts into the instructions."""
        facts = _facts(context) if context.state is not None else []
        lines = [
            "You have a memory for this conversation: use the remember tool to keep facts the user "
            "tells you that will matter later, recall to look them up and forget when told to."
        ]
        if facts:
            lines.append("What you remember:")
            lines.extend(f"- [{f.get('id')}] {f.get('text')}" for f in facts if isinstance(f, dict))
        return ContextAdditions(instructions=["\n".join(lines)])
