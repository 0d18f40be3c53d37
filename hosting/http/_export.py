"""`GET users/{user_id}/export` (and `me/export`): everything kept for a user, streamed as NDJSON,
one JSON object a line, each with its `kind`:

* `user` first (`user_id`, `exported_at`; behind App Service Authentication, the signed-in
  principal's own `principal`: `provider` and `id`, which the stored `user_id` may be a digest of);
* `memory`: each long-term memory item (as the memory routes show it), newest created first;
* `session`: each session the user owns, of every hosted agent (`agent`, `session_id`,
  `last_operation_time`, `state`: the stored document as saved), followed by its
  `archived_entry` lines (`agent`, `session_id`, `index`: the entry's absolute index, `entry` as
  stored), oldest first, when older entries were archived;
* `error`: a part that could not be read (`code`, `detail`, and what it concerns); the export
  goes on with the next part, or ends when the durable backend cannot be queried;
* `end` last: counts and `complete` (false after any error). A response without it was cut off.

Nothing is held whole: memory is read a page at a time, sessions a page of the entity query at a
time, archived history a chunk at a time. The user's sessions are found by the walk the erasure
shares (hosting.client._owned): every session of every hosted agent, keeping the user's. Its cost
grows with the app's sessions, not the user's.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
import azure.functions as func
from starlette.responses import StreamingResponse

from agents import Agent, now_iso
from agents.memory import MAX_LIST_LIMIT, MemoryCursor
from state import HistoryUnavailable

from .._errors import ProblemCode, ProblemError
from .._ids import entity_name
from ..archive import HistoryArchive, archived_chunks, default_archive
from ..client import ContinuationRefused, DurableClient, NoQueryEndpoint, owned_sessions, rpc_base_url
from ..stored import StoredDocument
from ._memories import UserMemories, memory_body, route_user
from ._openapi import NDJSON
from ._users import easy_auth_enabled, request_principal

log = logging.getLogger("hosting.http")


def ndjson_line(value: Mapping[str, Any]) -> bytes:
    """One line of the export. Stored text may hold a lone surrogate (not encodable as UTF-8):
    such a line is written with JSON escapes instead, which every JSON reader takes back."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(value, separators=(",", ":")) + "\n").encode("ascii")


class UserExport:
    """The handler of the export routes."""

    def __init__(
        self, agents: Mapping[str, Agent], memories: UserMemories, archive: HistoryArchive | None = None
    ) -> None:
        self.agents = agents
        self.memories = memories
        self._archive = archive

    async def export(self, req: func.HttpRequest, client: DurableClient) -> StreamingResponse:
        """GET users/{user_id}/export, me/export"""
        user = route_user(req)
        store = self.memories.store()  # a store or backend that is not there: a problem, not a stream
        if rpc_base_url(client) is None:
            raise ProblemError(ProblemCode.STORAGE_UNAVAILABLE, "the durable backend cannot be queried")
        archive = self._archive or default_archive()
        counts = {"memories": 0, "sessions": 0, "archived_entries": 0, "errors": 0}
        exported_at = now_iso()
        header: dict[str, Any] = {"kind": "user", "user_id": user, "exported_at": exported_at}
        principal = request_principal(req) if easy_auth_enabled() else None
        if principal is not None and principal.user_id == user:
            header["principal"] = principal.display()  # the provider's own id, never stored

        async def lines() -> AsyncIterator[bytes]:
            yield ndjson_line(header)
            after: MemoryCursor | None = None
            while True:
                page = await store.list_user(user, limit=MAX_LIST_LIMIT, after=after)
                for item in page.items:
                    counts["memories"] += 1
                    yield ndjson_line({"kind": "memory", **memory_body(item).model_dump(mode="json")})
                if page.next is None:
                    break
                after = page.next
            for agent in self.agents:
                async for line in self._sessions(client, archive, agent, user, counts):
                    yield line
            yield ndjson_line({"kind": "end", **counts, "complete": counts["errors"] == 0})

        return StreamingResponse(lines(), media_type=NDJSON, headers={"Cache-Control": "no-store"})

    async def _sessions(
        self, client: DurableClient, archive: HistoryArchive, agent: str, user: str, counts: dict[str, int]
    ) -> AsyncIterator[bytes]:
        """The lines of `user`'s sessions of one agent, a page of the entity query at a time."""
        entity = entity_name(agent)
        sessions = owned_sessions(client, agent, user)
        while True:
            try:
                owned = await anext(sessions)
            except StopAsyncIteration:
                return
            except (NoQueryEndpoint, ContinuationRefused, aiohttp.ClientError, TimeoutError) as error:
                log.warning("export: the entity query of %s failed: %s", entity, error)
                counts["errors"] += 1
                yield ndjson_line(
                    {
                        "kind": "error",
                        "code": str(ProblemCode.STORAGE_UNAVAILABLE),
                        "agent": agent,
                        "detail": f"the sessions of {agent!r} could not be listed: {type(error).__name__}",
                    }
                )
                return
            counts["sessions"] += 1
            yield ndjson_line(
                {
                    "kind": "session",
                    "agent": agent,
                    "session_id": owned.session_id,
                    "last_operation_time": owned.item.get("lastOperationTime"),
                    "state": owned.document.document,
                }
            )
            key, document = owned.session_id, owned.document
            async for line in self._archived(archive, entity, agent, key, document, counts):
                yield line

    async def _archived(
        self,
        archive: HistoryArchive,
        entity: str,
        agent: str,
        key: str,
        document: StoredDocument,
        counts: dict[str, int],
    ) -> AsyncIterator[bytes]:
        try:
            async for chunk in archived_chunks(archive, entity, key, document):
                for offset, entry in enumerate(chunk.entries):
                    counts["archived_entries"] += 1
                    yield ndjson_line(
                        {
                            "kind": "archived_entry",
                            "agent": agent,
                            "session_id": key,
                            "index": chunk.ref.first + offset,
                            "entry": entry,
                        }
                    )
        except HistoryUnavailable as error:
            counts["errors"] += 1
            yield ndjson_line(
                {
                    "kind": "error",
                    "code": str(ProblemCode.HISTORY_UNAVAILABLE),
                    "agent": agent,
                    "session_id": key,
                    "chunk": error.chunk,
                    "detail": str(error),
                }
            )
