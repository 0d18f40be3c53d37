"""Reading a session's whole history from its state document plus its archived chunks: pages
(newest first) and the runs whose entries were archived."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
    """A finished run whose entries were archived (its record is among the state's archived
    runs), read from its chunks; None when the state has no record of it."""
    record = document.archived_run(correlation_id)
    if record is None or document.archive is None:
        return None
    state_archive = document.archive
    response = await _archived_entry(archive, entity, key, state_archive, record.response_index)
    request = None
    if record.request_index is not None:
        request = dict(await _archived_entry(archive, entity, key, state_archive, record.request_index))
    return StoredRun(correlation_id, request, dict(response), record.request_hash)


async def _archived_entry(
    archive: HistoryArchive, entity: str, key: str, state_archive: Mapping[str, Any], index: int
) -> Mapping[str, Any]:
    chunk = await archive.chunk_holding(entity, key, state_archive, index)
    return chunk.entries[index - chunk.ref.first]
