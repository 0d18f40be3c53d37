"""Reading a session's whole history from its state document plus its archived chunks: pages
(newest first) and the runs whose entries were archived."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..stored._runs import StoredRun
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


def counts(document: Mapping[str, Any]) -> tuple[int, int]:
    """(entries in all, entries archived) of a checked state document."""
    data = document.get("data") or {}
    archive = data.get("archive")
    archived = archive["archivedEntries"] if isinstance(archive, dict) else 0
    return archived + len(data.get("conversationHistory") or ()), archived


async def history_page(
    archive: HistoryArchive,
    entity: str,
    key: str,
    document: Mapping[str, Any],
    cursor: Cursor | None,
    limit: int,
) -> Page:
    """One page of a session's history (a checked state document). A cursor past the end is
    clamped to the end; a missing or corrupt chunk raises `state.HistoryUnavailable`."""
    data = document.get("data") or {}
    history = data.get("conversationHistory") or []
    total, archived = counts(document)
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
        holder = await archive.chunk_holding(entity, key, data["archive"], index, hint)
        hint = holder.ref.name
        while index >= max(start, holder.ref.first):
            entries.append(holder.entries[index - holder.ref.first])
            index -= 1
    if start == 0:
        return Page(entries, None, total)
    if start >= archived:
        return Page(entries, Cursor(start), total)
    return Page(entries, Cursor(start, holder.ref.name if holder is not None else hint), total)


def state_archive(document: Any) -> Mapping[str, Any] | None:
    """`data.archive` of a (checked) state document, or None."""
    data = document.get("data") if isinstance(document, Mapping) else None
    archive = data.get("archive") if isinstance(data, Mapping) else None
    return archive if isinstance(archive, Mapping) else None


async def archived_run(
    archive: HistoryArchive,
    entity: str,
    key: str,
    state_archive: Mapping[str, Any] | None,
    correlation_id: str,
) -> StoredRun | None:
    """A finished run whose entries were archived (its record is among the state's archived
    runs, `data.archive.runs`), read from its chunks; None when the state has no record of it."""
    record = state_archive.get("runs", {}).get(correlation_id) if state_archive is not None else None
    if not isinstance(record, Mapping) or state_archive is None:
        return None
    response = await _archived_entry(archive, entity, key, state_archive, record["responseIndex"])
    request_index = record.get("requestIndex")
    request = None
    if request_index is not None:
        request = dict(await _archived_entry(archive, entity, key, state_archive, request_index))
    return StoredRun(correlation_id, request, dict(response), record.get("requestHash"))


async def _archived_entry(
    archive: HistoryArchive, entity: str, key: str, state_archive: Mapping[str, Any], index: int
) -> Mapping[str, Any]:
    chunk = await archive.chunk_holding(entity, key, state_archive, index)
    return chunk.entries[index - chunk.ref.first]
