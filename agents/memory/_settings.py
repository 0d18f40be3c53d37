"""Which memory store the app uses, from its settings (docs/agents.md "Long-term memory")."""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

from .._errors import AgentConfigurationError
from ._sqlite import SqliteMemoryStore
from ._store import MemoryStore

MEMORY_PATH_ENV = "DURABLE_AGENTS_MEMORY_PATH"
"""File of the embedded SQLite memory store (default: `default_memory_path`)."""
HOST_DATA_ENV = "DEVHOST_DATA_DIR"
"""Set by the local host for its workers: its data directory (the stream store's default lives
there too), shared by its worker processes and by no other host."""
INSTANCE_ENV = "WEBSITE_INSTANCE_ID"
"""Set by Azure on every instance: there, a file on one instance is not the app's memory."""

_lock = threading.Lock()
_default: MemoryStore | None = None


def default_memory_path() -> Path:
    """Where the embedded store lives unless `DURABLE_AGENTS_MEMORY_PATH` says otherwise: in the
    local host's data directory, else in an owner-only folder of the temp directory."""
    data = os.environ.get(HOST_DATA_ENV, "").strip()
    if data:
        return Path(data) / "memory" / "memory.db"
    folder = f"durable-agents-{os.getuid()}" if hasattr(os, "getuid") else "durable-agents"
    return Path(tempfile.gettempdir()) / folder / "memory" / "memory.db"


def private_folder(folder: Path) -> None:
    """Create `folder` (and its parents) for this user alone; refuse one another user owns or
    others may write to (a folder made in advance in a shared temp dir could be read or swapped)."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not hasattr(os, "getuid"):
        return
    info = folder.stat()
    if info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise AgentConfigurationError(
            f"the memory store folder {folder} belongs to another user or others may write to it; "
            f"remove it or set {MEMORY_PATH_ENV}"
        )


def memory_store_from_env() -> MemoryStore:
    """The app's memory store (one per process): SQLite at `DURABLE_AGENTS_MEMORY_PATH` or the
    default path. In Azure (several instances) only a named path is used: a file in an
    instance's temp directory would be a different memory on every instance."""
    global _default
    with _lock:
        if _default is None:
            named = os.environ.get(MEMORY_PATH_ENV, "").strip()
            if not named and os.environ.get(INSTANCE_ENV):
                raise AgentConfigurationError(
                    "long-term memory has no store shared by the app's instances: set "
                    f"{MEMORY_PATH_ENV} to a file on shared storage (an Azure Table Storage backend "
                    "needs the azure-data-tables package, which this build does not have)"
                )
            path = Path(named) if named else default_memory_path()
            if named:
                path.parent.mkdir(parents=True, exist_ok=True)
            else:
                for folder in (path.parent.parent, path.parent):
                    private_folder(folder)
            _default = SqliteMemoryStore(path)
        return _default
