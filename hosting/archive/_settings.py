"""Which blob store archived history goes to, and the archiving policy, from app settings.

* `DURABLE_AGENTS_HISTORY_STORE`: `files` or `azure`. Unset: `azure` when the connection below
  is a real account (a connection string other than `UseDevelopmentStorage=true`, or
  identity-based settings), else `files`.
* `DURABLE_AGENTS_HISTORY_CONNECTION` (default `AzureWebJobsStorage`): the connection setting
  (or setting prefix, for identity-based connections) of the storage account.
* `DURABLE_AGENTS_HISTORY_CONTAINER` (default `<task hub>-history`, lower case: hosting._hub):
  the blob container, per app as the task hub is, so apps sharing a storage account never share it.
* `DURABLE_AGENTS_HISTORY_DIR` (default `.agent-history`): the folder of the `files` store.
* `DURABLE_AGENTS_ARCHIVE_AT_BYTES` (default 40960): entries above this many bytes are archived.
* `DURABLE_AGENTS_ARCHIVE_KEEP_BYTES` (default 16384): about this much of the newest history stays.
"""

from __future__ import annotations

import pathlib
from collections.abc import Mapping

from agents import AgentConfigurationError, StorageConnection
from state import ArchivePolicy

from .._errors import HostingConfigurationError
from .._hub import history_container
from .._settings import (
    ARCHIVE_AT_ENV,
    ARCHIVE_KEEP_ENV,
    DEFAULT_ARCHIVE_AT_BYTES,
    DEFAULT_KEEP_BYTES,
    MAX_POLICY_BYTES,
    ArchiveSettings,
    HostingSettings,
)
from .._settings import DEFAULT_HISTORY_CONNECTION as DEFAULT_CONNECTION
from .._settings import DEFAULT_HISTORY_DIR as DEFAULT_DIR
from .._settings import HISTORY_CONNECTION_ENV as CONNECTION_ENV
from .._settings import HISTORY_CONTAINER_ENV as CONTAINER_ENV
from .._settings import HISTORY_DIR_ENV as DIR_ENV
from .._settings import HISTORY_STORE_ENV as STORE_ENV
from ._azure import AzureBlobChunkStore
from ._store import ChunkStore, FileChunkStore

__all__ = [
    "ARCHIVE_AT_ENV", "CONNECTION_ENV", "CONTAINER_ENV", "DEFAULT_ARCHIVE_AT_BYTES", "DEFAULT_CONNECTION",
    "DEFAULT_DIR", "DEFAULT_KEEP_BYTES", "DIR_ENV", "KEEP_ENV", "MAX_POLICY_BYTES", "STORE_ENV",
]

KEEP_ENV = ARCHIVE_KEEP_ENV


def policy_from_env(environ: Mapping[str, str] | None = None) -> ArchivePolicy:
    """The archiving policy from the settings above in `environ` (default: the environment), now."""
    return archive_policy(ArchiveSettings.load(environ))


def archive_policy(settings: ArchiveSettings) -> ArchivePolicy:
    """The archiving policy the settings name (the history kept is never more than the limit)."""
    archive_at = settings.archive_at_bytes
    return ArchivePolicy(max_state_bytes=archive_at, keep_bytes=min(settings.keep_bytes, archive_at))


def store_from_env(environ: Mapping[str, str] | None = None) -> ChunkStore:
    """The chunk store the settings above in `environ` (default: the environment) name, now."""
    return chunk_store(HostingSettings.load(environ))


def chunk_store(settings: HostingSettings) -> ChunkStore:
    """The chunk store the settings name."""
    archive = settings.archive
    env = archive.connection_settings
    real = StorageConnection.is_real(archive.connection, "blob", env)
    kind = archive.store or ("azure" if real else "files")
    if kind == "azure":
        container = archive.container or history_container(settings.task_hub)
        try:
            user = "history store 'azure'"
            connection = StorageConnection.from_settings(archive.connection, "blob", env, user=user)
        except AgentConfigurationError as error:
            raise HostingConfigurationError(str(error)) from None
        return AzureBlobChunkStore(connection, container)
    return FileChunkStore(pathlib.Path(archive.dir))
