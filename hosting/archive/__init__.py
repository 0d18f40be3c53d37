"""Archived session history: the chunk store interface and its backends (embedded files, Azure
Blob Storage), the entity's archiving and the readers of long histories. See docs/state.md
("Archived history") and docs/hosting.md."""

from ._azure import AzureBlobChunkStore
from ._default import default_archive
from ._history import HistoryArchive, SessionHistory
from ._pages import CURSOR_PATTERN, Cursor, Page, archived_chunks, archived_run, history_page
from ._settings import policy_from_env, store_from_env
from ._store import ChunkStore, FileChunkStore, chunk_path, epoch_prefix, session_prefix

__all__ = [
    "CURSOR_PATTERN",
    "AzureBlobChunkStore",
    "ChunkStore",
    "Cursor",
    "FileChunkStore",
    "HistoryArchive",
    "Page",
    "SessionHistory",
    "archived_chunks",
    "archived_run",
    "chunk_path",
    "default_archive",
    "epoch_prefix",
    "history_page",
    "policy_from_env",
    "session_prefix",
    "store_from_env",
]
