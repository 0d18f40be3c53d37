"""`HistoryArchive`: a session's archived chunks, written by the entity and read by everyone.

Writing (the entity, inside an operation, before it returns the new state): the chunks of an
`ArchivePlan` are stored first; only then does the state that references them go back to the
Durable extension to be committed. A crash in between leaves chunks nothing references
(orphans); the next archiving of that session deletes them (every chunk of another epoch, and
every chunk of the current epoch from the next sequence on that the new plan does not write
again). Nothing ever references a chunk that was not stored first.

Reading: chunks are immutable and named by their digest, so each is checked once and cached
(bounded by bytes). A missing or corrupt chunk raises `state.HistoryUnavailable` naming it.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from state import (
    AgentState,
    ArchivePlan,
    ArchivePolicy,
    Chunk,
    ChunkRef,
    HistoryUnavailable,
    apply_archive,
    archive_info,
    plan_archive,
    read_chunk,
)

from .._loop import run_sync
from ..stored import StoredDocument
from ._store import ChunkStore, chunk_path, delete_prefix, epoch_prefix, session_prefix

log = logging.getLogger("hosting.archive")

DEFAULT_CACHE_BYTES = 64 * 1024 * 1024


class HistoryArchive:
    """Archived history of every session of an app: one store, one policy, one chunk cache."""

    def __init__(
        self, store: ChunkStore, policy: ArchivePolicy, cache_bytes: int = DEFAULT_CACHE_BYTES
    ) -> None:
        self.store = store
        self.policy = policy
        self._cache: OrderedDict[str, Chunk] = OrderedDict()
        self._cache_bytes = cache_bytes
        self._cached = 0
        self._lock = threading.Lock()

    # -- writing (the entity) ----------------------------------------------------------------

    def settle(self, entity: str, key: str, state: AgentState) -> ArchivePlan | None:
        """Archive what the policy moves out of `state` (storing the chunks first); the state is
        changed only once every chunk is stored. Raises what the store raises, state untouched."""
        plan = plan_archive(state, self.policy)
        if plan is None:
            return None
        run_sync(lambda: self._store_plan(entity, key, state, plan))
        apply_archive(state, plan, self.policy)
        log.info(
            "%s@%s: archived %d entries in %s",
            entity, key, plan.move, ", ".join(c.ref.name[:20] for c in plan.chunks),
        )  # fmt: skip
        return plan

    async def _store_plan(self, entity: str, key: str, state: AgentState, plan: ArchivePlan) -> None:
        info = archive_info(state)
        next_sequence = info.next_sequence if info is not None else 0
        keep = {chunk_path(entity, key, plan.epoch, c.ref.name) for c in plan.chunks}
        current = epoch_prefix(entity, key, plan.epoch)
        # Orphans: this operation is the session's only writer, so what the committed state
        # does not reference and this plan does not write again is left by a crash.
        for path in await self.store.list_paths(session_prefix(entity, key)):
            if path in keep:
                continue
            if not path.startswith(current) or _sequence(path) >= next_sequence:
                log.info("%s@%s: deleting orphaned chunk %s", entity, key, path)
                await self.store.delete(path)
        for chunk in plan.chunks:
            await self.store.put(chunk_path(entity, key, plan.epoch, chunk.ref.name), chunk.data)

    # -- reading -----------------------------------------------------------------------------

    async def chunk(self, entity: str, key: str, epoch: str, ref: ChunkRef | str) -> Chunk:
        """One chunk of a session, checked (cached by path). Raises HistoryUnavailable."""
        name = ref if isinstance(ref, str) else ref.name
        path = chunk_path(entity, key, epoch, name)
        with self._lock:
            cached = self._cache.get(path)
            if cached is not None:
                self._cache.move_to_end(path)
                return cached
        data = await self.store.get(path)
        if data is None:
            raise HistoryUnavailable(name, "it is missing from the history store")
        chunk = read_chunk(ref, data, epoch=epoch)
        with self._lock:
            self._cache[path] = chunk
            self._cached += chunk.ref.bytes
            while self._cached > self._cache_bytes and len(self._cache) > 1:
                _, dropped = self._cache.popitem(last=False)
                self._cached -= dropped.ref.bytes
        return chunk

    async def chunk_holding(
        self, entity: str, key: str, archive: Mapping[str, Any], index: int, hint: str | None = None
    ) -> Chunk:
        """The chunk holding the absolute entry `index` (< archivedEntries), following the chain
        back from the state's references (or from `hint`, a chunk name a cursor carries)."""
        epoch = archive["epoch"]
        refs = [ChunkRef.from_json(r) for r in archive["chunks"]]
        for ref in reversed(refs):
            if ref.first <= index < ref.end:
                return await self.chunk(entity, key, epoch, ref)
        start: Chunk | None = None
        if hint is not None:
            try:
                candidate = await self.chunk(entity, key, epoch, hint)
            except HistoryUnavailable:
                candidate = None  # a stale or forged hint: start from the state's references
            if candidate is not None and index < candidate.ref.end:
                start = candidate
        if start is None:
            if not refs:
                raise HistoryUnavailable("(none)", f"no chunk holds entry {index}")
            start = await self.chunk(entity, key, epoch, refs[0])
        current = start
        while not current.ref.first <= index < current.ref.end:
            if current.previous is None or index >= current.ref.end:
                raise HistoryUnavailable(
                    current.ref.name, f"the chain of chunks does not reach entry {index}"
                )
            current = await self.chunk(entity, key, epoch, current.previous)
        return current

    async def archived_entries(self, entity: str, key: str, state_archive: Mapping[str, Any]) -> list[Any]:
        """Every archived entry of a session, oldest first (the chain read back from the newest
        chunk; cached per chunk). Raises HistoryUnavailable."""
        epoch = state_archive["epoch"]
        chunks: list[Chunk] = []
        refs = state_archive["chunks"]
        ref: ChunkRef | None = ChunkRef.from_json(refs[-1]) if refs else None
        while ref is not None:
            chunk = await self.chunk(entity, key, epoch, ref)
            chunks.append(chunk)
            ref = chunk.previous
        return [entry for chunk in reversed(chunks) for entry in chunk.entries]

    async def forget(self, entity: str, key: str, epoch: str | None = None) -> int:
        """Delete a session's chunks (of one epoch, or all); call after the change committed."""
        prefix = epoch_prefix(entity, key, epoch) if epoch else session_prefix(entity, key)
        return await delete_prefix(self.store, prefix)


def _sequence(path: str) -> int:
    name = path.rsplit("/", 1)[-1]
    try:
        return int(name[:8])
    except ValueError:
        return -1


class SessionHistory:
    """One session's archived entries, for an agent whose context policy asks for them."""

    def __init__(self, archive: HistoryArchive, entity: str, key: str, state: AgentState) -> None:
        self._archive = archive
        self._entity = entity
        self._key = key
        self._state_archive: Mapping[str, Any] | None = StoredDocument.of_state(state).archive

    async def entries(self) -> list[Any]:
        """Every archived entry, oldest first."""
        if self._state_archive is None:
            return []
        return await self._archive.archived_entries(self._entity, self._key, self._state_archive)
