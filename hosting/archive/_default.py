"""The app's one `HistoryArchive`, made from the settings on first use."""

from __future__ import annotations

import threading

from .._settings import current
from ._history import HistoryArchive
from ._settings import archive_policy, chunk_store

_lock = threading.Lock()
_archive: HistoryArchive | None = None


def default_archive() -> HistoryArchive:
    """The archive the settings name (`DURABLE_AGENTS_HISTORY_*`, as `build_app` read them), shared
    by the entity and the API."""
    global _archive
    with _lock:
        if _archive is None:
            settings = current()  # without build_app, a read of the environment: once
            _archive = HistoryArchive(chunk_store(settings), archive_policy(settings.archive))
        return _archive
