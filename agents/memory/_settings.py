"""Which memory store the app uses, from its settings (docs/agents.md "Long-term memory").

* `DURABLE_AGENTS_MEMORY_STORE`: `sqlite` or `table`. Unset: `sqlite` when
  `DURABLE_AGENTS_MEMORY_PATH` names a file, else `table` when the connection below is a storage
  account (a connection string other than `UseDevelopmentStorage=true`, or identity-based
  settings: so on Azure, where `AzureWebJobsStorage` is the app's account), else `sqlite`.
* `DURABLE_AGENTS_MEMORY_CONNECTION` (default `AzureWebJobsStorage`): the connection setting (or
  prefix, for identity-based connections) of the Table store's account (`_connection`).
* `DURABLE_AGENTS_MEMORY_TABLE`: the table; default the name the host passes in
  (`use_memory_settings`: per app, from its task hub), else `DEFAULT_TABLE`.
* `DURABLE_AGENTS_MEMORY_PATH`: the SQLite file (default `default_memory_path`).

The host reads these at startup (`MemorySettings.from_env`), so a bad value stops the app there,
naming the setting; the store itself is opened on first use.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .._errors import AgentConfigurationError
from .._storage import StorageConnection
from ._sqlite import SqliteMemoryStore
from ._store import MemoryStore

MEMORY_PATH_ENV = "DURABLE_AGENTS_MEMORY_PATH"
"""File of the embedded SQLite memory store (default: `default_memory_path`)."""
MEMORY_STORE_ENV = "DURABLE_AGENTS_MEMORY_STORE"
"""`sqlite` or `table` (default: see the module)."""
MEMORY_CONNECTION_ENV = "DURABLE_AGENTS_MEMORY_CONNECTION"
MEMORY_TABLE_ENV = "DURABLE_AGENTS_MEMORY_TABLE"
DEFAULT_CONNECTION = "AzureWebJobsStorage"
DEFAULT_TABLE = "DurableAgentsMemory"
"""The table when neither the setting nor the host names one."""
STORES = ("sqlite", "table")
# Table names: 3-63 letters and digits, starting with a letter; "tables" is reserved.
_TABLE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]{2,62}")
HOST_DATA_ENV = "DEVHOST_DATA_DIR"
"""Set by the local host for its workers: its data directory (the stream store's default lives
there too), shared by its worker processes and by no other host."""
INSTANCE_ENV = "WEBSITE_INSTANCE_ID"
"""Set by Azure on every instance: there, a file on one instance is not the app's memory."""

_lock = threading.Lock()
_default: MemoryStore | None = None
_configured: MemorySettings | None = None


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


@dataclass(frozen=True)
class MemorySettings:
    """The app's memory store as its settings name it (see the module)."""

    store: str = "sqlite"
    path: Path | None = None
    """The SQLite file `DURABLE_AGENTS_MEMORY_PATH` names (None: `default_memory_path`)."""
    connection: StorageConnection | None = None
    table: str = DEFAULT_TABLE
    in_azure: bool = False
    """`WEBSITE_INSTANCE_ID` is set: the app may run on several instances."""

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, default_table: str = DEFAULT_TABLE
    ) -> MemorySettings:
        """The settings of `environ` (default: the process's); `default_table`: the table unless
        `DURABLE_AGENTS_MEMORY_TABLE` names one. `AgentConfigurationError` names a bad setting."""
        env = os.environ if environ is None else environ
        store = env.get(MEMORY_STORE_ENV, "").strip().lower()
        if store not in ("", *STORES):
            raise AgentConfigurationError(f"{MEMORY_STORE_ENV} must be 'sqlite' or 'table', not {store!r}")
        named = env.get(MEMORY_PATH_ENV, "").strip()
        connection_name = env.get(MEMORY_CONNECTION_ENV, "").strip() or DEFAULT_CONNECTION
        if not store:
            real = StorageConnection.is_real(connection_name, "table", env)
            store = "table" if not named and real else "sqlite"
        table = env.get(MEMORY_TABLE_ENV, "").strip() or default_table
        if _TABLE_NAME.fullmatch(table) is None or table.lower() == "tables":
            raise AgentConfigurationError(
                f"{MEMORY_TABLE_ENV} must be a table name: 3 to 63 letters and digits starting with a "
                f"letter, not 'tables' (got {table!r})"
            )
        connection = None
        if store == "table":
            user = "the Table memory store"
            connection = StorageConnection.from_settings(connection_name, "table", env, user=user)
        return cls(
            store=store,
            path=Path(named) if named else None,
            connection=connection,
            table=table,
            in_azure=bool(env.get(INSTANCE_ENV, "").strip()),
        )

    def open(self) -> MemoryStore:
        """The store these settings name."""
        if self.store == "table":
            assert self.connection is not None  # from_env sets it for this store
            from ._table import TableMemoryStore  # with the Tables SDK, only when chosen

            return TableMemoryStore(self.connection, self.table)
        if self.path is None and self.in_azure:
            raise AgentConfigurationError(
                "long-term memory has no store shared by the app's instances: set "
                f"{MEMORY_STORE_ENV}=table (the app's storage account, {DEFAULT_CONNECTION}) or "
                f"{MEMORY_PATH_ENV} to a file for an app held to one instance"
            )
        path = self.path or default_memory_path()
        if self.path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        else:
            for folder in (path.parent.parent, path.parent):
                private_folder(folder)
        return SqliteMemoryStore(path)


def use_memory_settings(settings: MemorySettings) -> None:
    """Make `settings` the process's (the host calls this at startup, with the table of its app);
    the store is opened from them on first use."""
    global _configured, _default
    with _lock:
        if settings != _configured:
            _configured = settings
            _default = None


def memory_store_from_env() -> MemoryStore:
    """The app's memory store (one per process): from the settings the host gave
    (`use_memory_settings`), else from the environment. SQLite in Azure (several instances) only
    at a named path: a file in an instance's temp directory would be a different memory on every
    instance."""
    global _default
    with _lock:
        if _default is None:
            _default = (_configured or MemorySettings.from_env()).open()
        return _default
