"""The sessions one user owns, of one agent: the one walk the export (hosting.http._export) and
the erasure (hosting.lifecycle._erasure) share.

There is no index of sessions by user: a session's owner is only in its stored document
(`data.userId`), so the walk pages through every session of the agent with its state (the entity
query with `fetchState=true`, as the sessions list) and keeps the user's, skipping tombstones
(a deleted session holds no content). Its cost grows with the agent's sessions, not the user's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from .._ids import entity_name
from ..stored import StoredDocument
from ._binding import DurableClient
from ._query import entity_key, query_entities

SESSION_PAGE = 20
"""Sessions (with their states) one entity query page holds."""


@dataclass(frozen=True)
class OwnedSession:
    """One session of the user's: its id, the query's item (`lastOperationTime`, ...) and the
    stored document."""

    session_id: str
    item: dict[str, Any]
    document: StoredDocument


async def owned_sessions(client: DurableClient, agent: str, user: str) -> AsyncIterator[OwnedSession]:
    """`user`'s sessions of `agent`, a page of the entity query at a time. Raises what
    `query_entities` raises (`NoQueryEndpoint`, `ContinuationRefused`, aiohttp's errors)."""
    entity = entity_name(agent)
    token: str | None = None
    while True:
        items, token = await query_entities(
            client, entity, top=SESSION_PAGE, continuation=token, fetch_state=True
        )
        for item in items:
            key = entity_key(item)
            document = StoredDocument.parse(item.get("state"))
            if key is None or document is None or document.is_tombstone or document.owner != user:
                continue
            yield OwnedSession(key, item, document)
        if not token:
            return
