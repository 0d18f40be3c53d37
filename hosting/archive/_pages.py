"""Reading a session's whole history from its state document plus its archived chunks: pages
(newest first), every chunk in order (an export), and the runs whose entries were archived."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from state import Chunk, ChunkRef, HistoryUnavailable

from ..stored import StoredDocument, StoredRun
from ._history import HistoryArchive

CURSOR_PATTERN = r"^(0|[1-9][0-9]{0,11})(\.[0-9]{8}-[0-9a-f]{64})?$"
"""A history cursor: the absolute index to page before, and a hint naming the chunk holding it."""
_CURSOR = re.compile(CURSOR_PATTERN)


@dataclass(frozen=True)
class Cursor:
    """Where a page ends: entries before `before`; `hint` names the chunk that holds `before`."""

    before: int
    hint: str | None = None

    @classmethod
    def parse(cls, text: str) -> Cursor | None:
        """The cursor `text` spells, or None when it is not one."""
        match = _CURSOR.fullmatch(text)
        if match is None:
            return None
        return cls(int(match.group(1)), match.group(2)[1:] if match.group(2) else None)

    def __str__(self) -> str:
        return f"{self.before}.{self.hint}" if self.hint else str(self.before)


@dataclass(frozen=True)
class Page:
    """Entries newest first, exactly as stored, and the cursor of the next (older) page."""

    entries: list[Mapping[str, Any]]
    next: Cursor | None
    total: int


async def history_page(
    archive: HistoryArchive,
    entity: str,
    key: str,
    document: StoredDocument,
    cursor: Cursor | None,
    limit: int,
) -> Page:
    """One page of a session's history (a checked state document). A cursor past the end is
    clamped to the end; a missing or corrupt chunk raises `state.HistoryUnavailable`."""
    history = document.history
    total, archived = document.counts()
    before = total if cursor is None else min(cursor.before, total)
    start = max(0, before - limit)
    entries: list[Mapping[str, Any]] = []
    index = before - 1
    hint = cursor.hint if cursor is not None else None
    holder = None
    while index >= start:
        if index >= archived:
            entries.append(history[index - archived])
            index -= 1
            continue
        holder = await archive.chunk_holding(entity, key, document.archive or {}, index, hint)
        hint = holder.ref.name
        while index >= max(start, holder.ref.first):
            entries.append(holder.entries[index - holder.ref.first])
            index -= 1
    if start == 0:
        return Page(entries, None, total)
    if start >= archived:
        return Page(entries, Cursor(start), total)
    return Page(entries, Cursor(start, holder.ref.name if holder is not None else hint), total)


async def archived_run(
    archive: HistoryArchive,
    entity: str,
    key: str,
    document: StoredDocument,
    correlation_id: str,
) -> StoredRun | None:
    """A finished run whose entries were archived, read from its chunks: its record is among the
    state's archived runs, or (once that index is full: it keeps the most recent runs) in the
    chunk that holds its entries; None when neither has it."""
    state_archive = document.archive
    if state_archive is None:
        return None
    record = document.archived_run(correlation_id)
    if record is None and document.archived_runs_indexed() >= archive.policy.max_archived_runs:
        chained = await _chained_record(archive, entity, key, state_archive, correlation_id)
        record = StoredDocument.archived_record(chained)
    if record is None:
        return None
    response = await _archived_entry(archive, entity, key, state_archive, record.response_index)
    request = None
    if record.request_index is not None:
        request = dict(await _archived_entry(archive, entity, key, state_archive, record.request_index))
    return StoredRun(correlation_id, request, dict(response), record.request_hash)


async def _chained_record(
    archive: HistoryArchive, entity: str, key: str, state_archive: Mapping[str, Any], correlation_id: str
) -> Mapping[str, Any] | None:
    """The record of an archived run the state's index no longer keeps, from the chunk holding
    its entries (each chunk records its own runs), walking the chain back from the newest chunk
    (chunks are cached; a missing one raises `state.HistoryUnavailable`)."""
    refs = state_archive.get("chunks")
    if not isinstance(refs, list) or not refs:
        return None
    epoch = state_archive["epoch"]
    ref: ChunkRef | None = ChunkRef.from_json(refs[-1])
    while ref is not None:
        chunk = await archive.chunk(entity, key, epoch, ref)
        record = chunk.runs.get(correlation_id)
        if isinstance(record, Mapping):
            return record
        if chunk.previous is not None and chunk.previous.first >= chunk.ref.first:
            raise HistoryUnavailable(chunk.ref.name, "the chain of chunks does not go back")
        ref = chunk.previous
    return None


async def _archived_entry(
    archive: HistoryArchive, entity: str, key: str, state_archive: Mapping[str, Any], index: int
) -> Mapping[str, Any]:
    chunk = await archive.chunk_holding(entity, key, state_archive, index)
    return chunk.entries[index - chunk.ref.first]


async def archived_chunks(
    archive: HistoryArchive, entity: str, key: str, document: StoredDocument
) -> AsyncIterator[Chunk]:
    """Every archived chunk of a session, oldest first, one at a time (an export holds one chunk
    and the chain's references, never the whole archive). The chain links each chunk to its
    predecessor, so it is walked back first for the references, then read forward: each chunk is
    read twice unless the archive's cache still holds it. A missing or corrupt chunk raises
    `state.HistoryUnavailable`."""
    state_archive = document.archive
    refs = state_archive.get("chunks") if state_archive is not None else None
    if state_archive is None or not isinstance(refs, list) or not refs:
        return
    epoch = state_archive["epoch"]
    chain: list[ChunkRef] = []
    ref: ChunkRef | None = ChunkRef.from_json(refs[-1])
    while ref is not None:
        if chain and ref.first >= chain[-1].first:  # a chain must go back, or it never ends
            raise HistoryUnavailable(chain[-1].name, "the chain of chunks does not go back")
        chain.append(ref)
        ref = (await archive.chunk(entity, key, epoch, ref)).previous
    for ref in reversed(chain):
        yield await archive.chunk(entity, key, epoch, ref)
