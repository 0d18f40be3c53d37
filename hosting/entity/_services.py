"""What every operation of one agent's entity works with: `EntityServices`, built once per entity
and passed to the operation handlers (hosting.entity._operations), which keep nothing of their own
between operations (the session's state is in the entity context, one operation at a time)."""

from __future__ import annotations

from dataclasses import dataclass, field

from agents import Agent

from .._ids import entity_name
from .._settings import DEFAULT_MAX_SESSION_BYTES
from ..archive import HistoryArchive, default_archive
from ..streams import RunEvents, StreamKey, StreamStore
from ._context import EntityContext
from ._deadline import TimeLimits


@dataclass
class EntityServices:
    """One hosted agent's entity: its agent, its limits, and where its runs' history and events go."""

    agent: Agent
    limits: TimeLimits
    """The turn deadline and the batch budget (hosting.entity._deadline)."""
    max_session_bytes: int = DEFAULT_MAX_SESSION_BYTES
    streams: StreamStore | None = None
    """Where runs' events are published while they run (hosting.streams); None: not at all."""
    given_archive: HistoryArchive | None = None
    """The archive given at construction; None until first needed, then the app's default (the one
    `DURABLE_AGENTS_HISTORY_*` names, shared with the API)."""
    name: str = field(init=False)
    """The entity's name, `dafx-{agent}`."""

    def __post_init__(self) -> None:
        self.name = entity_name(self.agent.name)

    @property
    def archive(self) -> HistoryArchive:
        """Where this entity archives older history (the app's default unless one was given)."""
        if self.given_archive is None:
            self.given_archive = default_archive()
        return self.given_archive

    @property
    def may_pause(self) -> bool:
        """Some tool of the agent may need approval, so its turns may wait for decisions."""
        return any(t.requires_approval is not False for t in self.agent.all_tools)

    def events(self, context: EntityContext, correlation_id: str) -> RunEvents:
        """The publisher of the events of run `correlation_id` of the session in `context`."""
        return RunEvents(self.streams, StreamKey(self.agent.name, str(context.entity_key), correlation_id))
