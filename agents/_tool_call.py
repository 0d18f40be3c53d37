"""Which call a running tool serves: its turn's run id and the model's call id.

A turn interrupted by a crash runs again, so a tool that acts on the world (pays, sends, writes)
may be called again for the same call. Its idempotency key is the same on every attempt: a tool
passes it to the service it calls, which can then deduplicate the repeat.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class ToolCall:
    """The call a tool is running for (`current_tool_call()` inside a tool)."""

    run_id: str
    """The turn's correlation id."""
    call_id: str
    """The model's id of this call."""

    @property
    def idempotency_key(self) -> str:
        """Stable across every attempt of this call (`run_id:call_id`)."""
        return f"{self.run_id}:{self.call_id}"


_CURRENT: contextvars.ContextVar[ToolCall | None] = contextvars.ContextVar("agents_tool_call", default=None)


def current_tool_call() -> ToolCall | None:
    """The call the running tool serves; None outside a tool. Sync tools (run in a thread) and
    async ones see it alike, and calls running side by side each see their own."""
    return _CURRENT.get()


@contextmanager
def serving(call: ToolCall) -> Iterator[None]:
    """Make `call` the current one for the `with` block (the runner, around one tool call)."""
    token = _CURRENT.set(call)
    try:
        yield
    finally:
        _CURRENT.reset(token)
