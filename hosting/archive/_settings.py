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

import os
import pathlib
from collections.abc import Mapping

from agents import AgentConfigurationError, StorageConnection
from state import ArchivePolicy

from .._errors import HostingConfigurationError
from .._hub import history_container, task_hub
from .._numbers import number_setting
from ._azure import AzureBlobChunkStore
from ._store import ChunkStore, FileChunkStore

STORE_ENV = "DURABLE_AGENTS_HISTORY_STORE"
CONNECTION_ENV = "DURABLE_AGENTS_HISTORY_CONNECTION"
CONTAINER_ENV = "DURABLE_AGENTS_HISTORY_CONTAINER"
DIR_ENV = "DURABLE_AGENTS_HISTORY_DIR"
ARCHIVE_AT_ENV = "DURABLE_AGENTS_ARCHIVE_AT_BYTES"
KEEP_ENV = "DURABLE_AGENTS_ARCHIVE_KEEP_BYTES"

DEFAULT_CONNECTION = "AzureWebJobsStorage"
DEFAULT_DIR = ".agent-history"
DEFAULT_ARCHIVE_AT_BYTES = ArchivePolicy().max_state_bytes
"""40 KiB: with the runs index, archived runs and chunk references a state stays under 64 KiB
plus its latest turn."""
DEFAULT_KEEP_BYTES = ArchivePolicy().keep_bytes


MAX_POLICY_BYTES = 64 * 1024 * 1024
"""The largest size either setting takes (a state over it would not load in time for a turn)."""


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    value = number_setting(env, name, low=1024, high=MAX_POLICY_BYTES, unit="bytes", whole=True)
    return default if value is None else int(value)


def policy_from_env(environ: Mapping[str, str] | None = None) -> ArchivePolicy:
    """The archiving policy from the settings above."""
    env = os.environ if environ is None else environ
    archive_at = _int(env, ARCHIVE_AT_ENV, DEFAULT_ARCHIVE_AT_BYTES)
    keep = min(_int(env, KEEP_ENV, DEFAULT_KEEP_BYTES), archive_at)
    return ArchivePolicy(max_state_bytes=archive_at, keep_bytes=keep)


def store_from_env(environ: Mapping[str, str] | None = None) -> ChunkStore:
    """The chunk store the settings above name."""
    env = os.environ if environ is None else environ
    kind = env.get(STORE_ENV, "").strip().lower()
    connection_name = env.get(CONNECTION_ENV, "").strip() or DEFAULT_CONNECTION
    if kind not in ("", "files", "azure"):
        raise HostingConfigurationError(f"{STORE_ENV} must be 'files' or 'azure', not {kind!r}")
    if not kind:
        kind = "azure" if StorageConnection.is_real(connection_name, "blob", env) else "files"
    if kind == "azure":
        container = env.get(CONTAINER_ENV, "").strip() or history_container(task_hub(env))
        try:
            user = "history store 'azure'"
            connection = StorageConnection.from_settings(connection_name, "blob", env, user=user)
        except AgentConfigurationError as error:
            raise HostingConfigurationError(str(error)) from None
        return AzureBlobChunkStore(connection, container)
    return FileChunkStore(pathlib.Path(env.get(DIR_ENV, "").strip() or DEFAULT_DIR))
