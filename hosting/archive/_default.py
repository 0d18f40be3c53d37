"""The app's one `HistoryArchive`, made from the settings on first use."""

from __future__ import annotations

import threading

from ._history import HistoryArchive
from ._settings import policy_from_env, store_from_env

_lock = threading.Lock()
_archive: HistoryArchive | None = None


def default_archive() -> HistoryArchive:
    """The archive the settings name (`DURABLE_AGENTS_HISTORY_*`), shared by the entity and the API."""
    global _archive
    with _lock:
        if _archive is None:
            _archive = HistoryArchive(store_from_env(), policy_from_env())
        return _archive
