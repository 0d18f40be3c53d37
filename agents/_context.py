"""Context providers: behaviour shared by every session, with per-session state in the state bag.

A provider object belongs to the agent and is used by all sessions at once, so it must keep
nothing per session on ``self``: everything per session lives in ``ProviderContext.state``, loaded
from ``state.state_bag[source_id]`` before the turn and written back after a successful one. A
provider that declares ``state_model`` (a pydantic model) gets its state validated into that model
on load; stored state that does not fit fails the turn (``provider_error``, naming the provider)
and stays stored as it was.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ValidationError

from state import JSON, ChatMessage

from ._errors import AgentConfigurationError, AgentsError

if TYPE_CHECKING:
    from ._settings import ModelSettings
    from ._tools import FunctionTool

_SOURCE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")

CompleteFn = Callable[[str, str | None, "ModelSettings | None"], Awaitable[str]]


@dataclass
class ContextAdditions:
    """What a provider adds to one model call; nothing here is stored in the history.

    ``history``, when set, replaces the earlier-turn messages the model sees (a history reducer);
    ``messages`` go after the history and before the new request messages.
    """

    instructions: Sequence[str] = ()
    messages: Sequence[ChatMessage] = ()
    tools: Sequence[FunctionTool] = ()
    history: Sequence[ChatMessage] | None = None


@dataclass(eq=False)
class ProviderContext:
    """One provider's view of one turn of one session; ``state`` is its per-session state (an
    instance of the provider's ``state_model``, or a JSON value for a provider without one).

    A tool parameter annotated ``ProviderContext`` is filled with this object (the model never sees
    it), which is how a provider's tools reach the session's state.
    """

    __agents_tool_context__: ClassVar[bool] = True

    agent_name: str
    correlation_id: str
    state: JSON
    request_messages: Sequence[ChatMessage]
    history: Sequence[ChatMessage]
    history_mode: str = "local"
    response_messages: Sequence[ChatMessage] = ()
    history_offset: int = 0
    """How many replayed messages of the session precede `history` (they were archived)."""
    user_id: str | None = None
    """The user the session belongs to (`state.user_id`), or None: a session of no one in
    particular. Providers that keep memory across sessions key it by this."""
    session_id: str | None = None
    """The session's id as its host names it (None when the host did not say): what a provider
    records as the source of what it keeps beyond the session."""
    _complete: CompleteFn | None = field(default=None, repr=False)

    async def complete(
        self, prompt: str, *, instructions: str | None = None, model: ModelSettings | None = None
    ) -> str:
        """One plain model call (no tools, no history) with the agent's model or ``model``.

        Raises ModelCallError when the call fails for good; its usage counts towards the turn.
        """
        if self._complete is None:
            raise RuntimeError("this ProviderContext cannot call a model")
        return await self._complete(prompt, instructions, model)


EndReason = Literal["reset", "delete", "expiry"]
"""How a session ended: reset (`POST .../reset`), deleted, or expired after its idle TTL."""


@dataclass(eq=False)
class SessionEnd:
    """A session that ended, as `ContextProvider.on_session_ended` gets it: its id, owner, the
    agent, why it ended, and its conversation (the finished turns' messages, oldest first).

    ``key`` names this life of the session (a session id is reused after a reset): the same
    ended life always has the same key, so a hook that runs again can replace what it stored.
    ``messages`` are those the session's state held when it ended; entries it had archived
    (hosting.archive) are not among them.
    """

    agent_name: str
    session_id: str
    user_id: str | None
    reason: EndReason
    key: str
    messages: Sequence[ChatMessage]
    _complete: CompleteFn | None = field(default=None, repr=False)
    _erased: Callable[[], Awaitable[bool]] | None = field(default=None, repr=False)

    async def erased(self) -> bool:
        """Whether an erasure of the user's data began since this session ended (or about then):
        a hook must keep nothing of the session then. A hook that stores something of the user
        asks after storing it and takes it back on True, since the erasure may have passed its
        store already (docs/hosting.md "Session-end hooks"). False when the host cannot tell."""
        return False if self._erased is None else await self._erased()

    async def complete(
        self, prompt: str, *, instructions: str | None = None, model: ModelSettings | None = None
    ) -> str:
        """One plain model call (no tools, no history) with the agent's model or ``model``."""
        if self._complete is None:
            raise RuntimeError("this SessionEnd cannot call a model")
        return await self._complete(prompt, instructions, model)


class ProviderStateError(AgentsError):
    """A provider's stored state does not fit its ``state_model`` or cannot be stored as JSON.

    The message names the provider; the turn fails with ``provider_error`` and the stored state
    bag is left as it was.
    """


class ContextProvider:
    """Base of context providers; override ``before_model`` and/or ``after_turn``.

    ``source_id`` keys the provider's state in the state bag and must stay stable across
    deployments. ``state_model``, when set, is the pydantic model of that state: ``ctx.state`` is
    then an instance of it (or None before the first write), validated when loaded and dumped
    (by alias, as JSON) when saved. Without it ``ctx.state`` is a plain JSON value. ``tools`` are
    offered to the model on every turn (a ``ProviderContext`` parameter is bound to the turn's
    context). ``requires_local_history`` marks providers that work on the replayed history and
    so cannot be used with service-side history.
    """

    source_id: str = ""
    state_model: ClassVar[type[BaseModel] | None] = None
    tools: Sequence[FunctionTool] = ()
    requires_local_history: bool = False

    def __init__(self, source_id: str | None = None) -> None:
        if source_id is not None:
            self.source_id = source_id
        check_source_id(self.source_id)

    async def before_model(self, context: ProviderContext) -> ContextAdditions | None:
        """Called once per turn before the first model call; may read and change ``context.state``."""
        return None

    async def after_turn(self, context: ProviderContext) -> None:
        """Called after a successful turn with ``context.response_messages`` filled in."""
        return None

    async def on_session_started(self, context: ProviderContext) -> None:
        """Called on the first turn of a session (no earlier message), before ``before_model``.

        It runs again when that turn is retried, so it must be idempotent."""
        return None

    async def on_session_ended(self, session: SessionEnd) -> None:
        """Called once the session's reset, delete or expiry is committed, durably and at least
        once (the host retries it), so it must be idempotent: key what it keeps by
        ``session.key``. The session's state is gone by then; ``session`` holds what it needs."""
        return None

    @property
    def has_session_end(self) -> bool:
        """Whether this provider overrides ``on_session_ended`` (the host skips the work otherwise)."""
        return type(self).on_session_ended is not ContextProvider.on_session_ended

    def _describe(self) -> str:
        return f"context provider {self.source_id!r} ({type(self).__name__})"

    def load_state(self, stored: JSON) -> Any:
        """This provider's state for one turn from its state-bag value (None: nothing stored).

        With ``state_model``: a validated instance; ProviderStateError (naming the provider) when
        the stored value does not fit. Without: a deep copy, so a failed turn changes nothing.
        """
        if stored is None:
            return None
        if self.state_model is None:
            return copy.deepcopy(stored)
        try:
            return self.state_model.model_validate(stored)
        except ValidationError as error:
            details = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}"
                for e in error.errors(include_url=False)[:3]
            )
            raise ProviderStateError(
                f"{self._describe()}: its stored state has an unexpected shape for "
                f"{self.state_model.__name__} ({details}); it is kept unchanged"
            ) from None

    def dump_state(self, state: Any) -> JSON:
        """The state-bag value of ``state`` (a ``state_model`` instance or JSON), as plain JSON."""
        value = state.model_dump(mode="json", by_alias=True) if isinstance(state, BaseModel) else state
        try:
            return json.loads(json.dumps(value, allow_nan=False))
        except (TypeError, ValueError) as error:
            raise ProviderStateError(f"{self._describe()}: its state is not JSON: {error}") from None


def check_source_id(source_id: Any) -> None:
    """AgentConfigurationError unless ``source_id`` is a short, stable identifier."""
    if not isinstance(source_id, str) or not _SOURCE_ID.match(source_id):
        raise AgentConfigurationError(
            f"provider source_id {source_id!r} must be 1-128 characters: letters, digits, '.', '_', ':', '-'"
        )
