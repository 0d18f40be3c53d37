"""Which stream store the app uses, from its settings (documented in docs/streaming.md)."""

from __future__ import annotations

import base64
import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from redis.credentials import CredentialProvider

from .._errors import HostingConfigurationError
from ._store import StreamStore, retention_from_env

REDIS_ENV = "DURABLE_AGENTS_STREAM_REDIS"
"""Redis connection URL (``rediss://host:port`` for Azure); set: the Redis Streams backend."""
REDIS_ENTRA_ENV = "DURABLE_AGENTS_STREAM_REDIS_ENTRA"
"""``true``: authenticate to Redis with Microsoft Entra ID (DefaultAzureCredential) instead of a key."""
PATH_ENV = "DURABLE_AGENTS_STREAM_PATH"
"""File of the embedded SQLite store (default: durable-agents/streams.db in the temp directory)."""

REDIS_SCOPE = "https://redis.azure.com/.default"


def default_stream_path() -> Path:
    """Where the embedded store lives unless `DURABLE_AGENTS_STREAM_PATH` says otherwise."""
    return Path(tempfile.gettempdir()) / "durable-agents" / "streams.db"


class EntraIdCredentials(CredentialProvider):
    """redis-py credentials from Microsoft Entra ID: the token is the password, its object id
    (``oid`` claim) the user name, as Azure Cache for Redis / Azure Managed Redis expect.

    A token is fetched for each new connection and reused until five minutes before it expires.
    """

    def __init__(self, credential: Any = None) -> None:
        self._credential = credential
        self._lock = threading.Lock()
        self._cached: tuple[str, str, float] | None = None

    def _token(self) -> tuple[str, str, float]:
        with self._lock:
            if self._cached is not None and self._cached[2] - 300 > time.time():
                return self._cached
            if self._credential is None:
                from azure.identity import DefaultAzureCredential

                self._credential = DefaultAzureCredential()
            token = self._credential.get_token(REDIS_SCOPE)
            self._cached = (_object_id(token.token), token.token, float(token.expires_on))
            return self._cached

    def get_credentials(self) -> tuple[str, str]:
        user, password, _ = self._token()
        return user, password

    async def get_credentials_async(self) -> tuple[str, str]:
        import asyncio

        # A token refresh does blocking I/O; keep it off the loop.
        return await asyncio.to_thread(self.get_credentials)


def _object_id(token: str) -> str:
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return str(claims["oid"])
    except (IndexError, KeyError, ValueError) as exc:
        raise HostingConfigurationError(f"the Entra ID token for Redis carries no object id: {exc}") from exc


_lock = threading.Lock()
_stores: dict[tuple[str, ...], StreamStore] = {}


def stream_store_from_env() -> StreamStore:
    """The stream store the settings name: Redis when `DURABLE_AGENTS_STREAM_REDIS` is set, else the
    embedded SQLite store. One instance per configuration in a process."""
    retention = retention_from_env()
    url = os.environ.get(REDIS_ENV, "").strip()
    entra = os.environ.get(REDIS_ENTRA_ENV, "").strip().lower() in ("1", "true", "yes")
    path = os.environ.get(PATH_ENV, "").strip() or str(default_stream_path())
    config = ("redis", url, str(entra), str(retention)) if url else ("sqlite", path, str(retention))
    with _lock:
        store = _stores.get(config)
        if store is None:
            store = _stores[config] = _create(url, entra, path, retention)
    return store


def _create(url: str, entra: bool, path: str, retention: float) -> StreamStore:
    if url:
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise HostingConfigurationError(f"{REDIS_ENV} must be a redis://, rediss:// or unix:// URL")
        from ._redis import RedisStreamStore

        return RedisStreamStore(url, retention, credential_provider=EntraIdCredentials() if entra else None)
    from ._sqlite import SqliteStreamStore

    return SqliteStreamStore(path, retention)
