"""Runs whose entries were archived, as the durable-client side finds them (from the chunks)."""

from __future__ import annotations

from .._ids import entity_name
from ..archive import HistoryArchive, archived_run, default_archive
from ..stored import StoredDocument, StoredRun


async def find_archived_run(
    agent: str,
    session_id: str,
    document: StoredDocument,
    correlation_id: str,
    archive: HistoryArchive | None = None,
) -> StoredRun | None:
    """A finished run of the session whose entries were archived, or None. Raises
    `state.HistoryUnavailable` when its chunk cannot be read. A run the state shows queued or in
    progress was not archived; any other may have been, even once the state's index of archived
    runs no longer keeps it (hosting.archive `archived_run` then reads the chunks)."""
    if document.archive is None or correlation_id in document.waiting_ids():
        return None
    store = archive or default_archive()
    return await archived_run(store, entity_name(agent), session_id, document, correlation_id)
