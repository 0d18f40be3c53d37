"""HistoryReducer: the model sees a bounded window plus a running summary; the state keeps all."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from state import ChatMessage, FunctionCallContent, FunctionResultContent, TextContent

from ._context import ContextAdditions, ContextProvider, ProviderContext
from ._convert import call_arguments_text, result_text
from ._errors import AgentConfigurationError, ModelCallError
from ._settings import ModelSettings

log = logging.getLogger("agents")

SUMMARY_INSTRUCTIONS = (
    "You maintain a running summary of a conversation between a user and an assistant. Given the "
    "summary so far and the next part of the conversation, write the updated summary: keep every "
    "fact, decision, name, number and open question that may matter later; drop pleasantries. "
    "Answer with the summary text only."
)
_CLIP = 600


def safe_cuts(messages: Sequence[ChatMessage]) -> list[bool]:
    """``cuts[i]``: the window may start at message ``i`` without separating a call from its result."""
    cuts: list[bool] = []
    open_calls: set[str] = set()
    for message in messages:
        starts_with_result = any(isinstance(c, FunctionResultContent) for c in message.contents)
        cuts.append(not open_calls and not starts_with_result)
        for c in message.contents:
            if isinstance(c, FunctionCallContent):
                open_calls.add(c.call_id)
            elif isinstance(c, FunctionResultContent):
                open_calls.discard(c.call_id)
    cuts.append(not open_calls)
    return cuts


def _clip(text: str) -> str:
    return text if len(text) <= _CLIP else text[:_CLIP] + " [...]"


def transcript(messages: Sequence[ChatMessage]) -> str:
    """A plain-text rendering of messages for the summariser."""
    lines: list[str] = []
    for m in messages:
        for c in m.contents:
            if isinstance(c, TextContent):
                lines.append(f"{m.role}: {_clip(c.text)}")
            elif isinstance(c, FunctionCallContent):
                lines.append(f"{m.role} called {c.name}({_clip(call_arguments_text(c))})")
            elif isinstance(c, FunctionResultContent):
                lines.append(f"tool result: {_clip(result_text(c.result))}")
    return "\n".join(lines)


class ReducerState(BaseModel):
    """A session's reducer state: the running summary and how many replayed messages it covers."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    summary: str | None = None
    summarized_count: int = Field(default=0, alias="summarizedCount", ge=0)


class HistoryReducer(ContextProvider):
    """Bounds what the model sees of earlier turns to about ``keep_messages`` recent messages plus a
    summary of everything older, written by the model whenever more than ``max_messages`` would be
    visible. The stored history is never changed. Needs local history mode.

    Per-session state: ``ReducerState``, ``{"summary": str | None, "summarizedCount": int}`` where
    ``summarizedCount`` is how many replayed messages the summary covers.
    """

    state_model = ReducerState
    requires_local_history = True

    def __init__(
        self,
        source_id: str = "history-reducer",
        *,
        max_messages: int = 20,
        keep_messages: int = 10,
        summarize: bool = True,
        summary_model: ModelSettings | None = None,
        summary_instructions: str = SUMMARY_INSTRUCTIONS,
    ) -> None:
        super().__init__(source_id)
        if keep_messages < 1 or max_messages < keep_messages:
            raise AgentConfigurationError("HistoryReducer needs 1 <= keep_messages <= max_messages")
        self.max_messages = max_messages
        self.keep_messages = keep_messages
        self.summarize = summarize
        self.summary_model = summary_model
        self.summary_instructions = summary_instructions

    async def before_model(self, context: ProviderContext) -> ContextAdditions:
        """Fold messages that overflow the window into the summary; show the window and summary."""
        history = list(context.history)
        state: ReducerState = context.state if context.state is not None else ReducerState()
        summary = state.summary
        # summarized_count counts from the session's first message; `history` starts after the
        # archived ones (context.history_offset), which were summarized or passed over already.
        # The summary cannot cover more messages than the history holds.
        start = min(max(state.summarized_count - context.history_offset, 0), len(history))
        visible_from = start
        if len(history) - start > self.max_messages:
            cut = self._cut(history, start)
            if cut is not None:
                visible_from = cut
                new_summary = await self._fold(context, summary, history[start:cut])
                if new_summary is not None or not self.summarize:
                    summary = new_summary if self.summarize else None
                    context.state = ReducerState(
                        summary=summary, summarized_count=cut + context.history_offset
                    )
        instructions: list[str] = []
        if summary:
            instructions.append(f"Summary of the earlier conversation:\n{summary}")
        return ContextAdditions(instructions=instructions, history=history[visible_from:])

    def _cut(self, history: list[ChatMessage], start: int) -> int | None:
        """Where the visible window starts: the first safe boundary leaving <= keep messages."""
        cuts = safe_cuts(history)
        target = len(history) - self.keep_messages
        for i in range(max(target, start + 1), len(history) + 1):
            if cuts[i]:
                return i
        for i in range(target - 1, start, -1):
            if cuts[i]:
                return i
        return None

    async def _fold(
        self, context: ProviderContext, summary: str | None, older: list[ChatMessage]
    ) -> str | None:
        if not self.summarize:
            return None
        prompt = (
            f"Summary so far:\n{summary or '(none)'}\n\n"
            f"Next part of the conversation:\n{transcript(older)}\n\n"
            "Updated summary:"
        )
        try:
            text = await context.complete(
                prompt, instructions=self.summary_instructions, model=self.summary_model
            )
        except ModelCallError as exc:
            # Keep the old summary and try again next turn; this turn still sees a bounded window.
            log.warning("history summary failed (%s); keeping the previous summary", exc)
            return None
        return text.strip() or summary
