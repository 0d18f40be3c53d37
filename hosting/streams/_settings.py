"""Which stream store the app uses, from its settings (`StreamSettings`, read once by `build_app`;
documented in docs/streaming.md)."""

from __future__ import annotations

import logging
import os
import re
import tempfile
import threading
from pathlib import Path

from .._errors import HostingConfigurationError
from .._hub import app_root
from .._settings import HOST_DATA_ENV, INSTANCE_ENV, HostingSettings, StreamSettings
from .._settings import STREAM_PATH_ENV as PATH_ENV
from .._settings import STREAM_REDIS_CLUSTER_ENV as REDIS_CLUSTER_ENV
from .._settings import STREAM_REDIS_ENTRA_ENV as REDIS_ENTRA_ENV
from .._settings import STREAM_REDIS_ENV as REDIS_ENV
from ._store import StreamStore

__all__ = ["HOST_DATA_ENV", "INSTANCE_ENV", "PATH_ENV", "REDIS_CLUSTER_ENV", "REDIS_ENTRA_ENV", "REDIS_ENV"]


def _name_part(value: str) -> str:
    # Key and folder safe: letters, digits, '-', '_' and '.' only (never ':' nor braces).
    return re.sub(r"[^A-Za-z0-9_.-]", "_", value)[:64] or "_"


def app_name(settings: StreamSettings) -> str:
    """The app's name: Azure's ``WEBSITE_SITE_NAME``, else the name of the app's folder."""
    return _name_part(settings.site_name or app_root().resolve().name)


def task_hub(hub: str) -> str:
    """The app's Durable task hub (`HostingSettings.task_hub`: as the extension resolves it), key safe."""
    return _name_part(hub.strip())


def key_prefix(settings: HostingSettings) -> str:
    """What every Redis key of this app starts with: the app and its task hub, so apps (or a
    staging and a production slot) sharing one cache never read each other's runs."""
    return f"dafx:{app_name(settings.streams)}:{task_hub(settings.task_hub)}:"


def default_stream_path(settings: HostingSettings) -> Path:
    """Where the embedded store lives unless `DURABLE_AGENTS_STREAM_PATH` says otherwise: in the
    local host's data directory (``DEVHOST_DATA_DIR``: shared by its worker processes, as a shared
    store would be, and by no other host), else in an owner-only folder of the temp directory named
    by the user, the app and its task hub."""
    data = settings.streams.host_data_dir
    if data:
        return Path(data) / "streams" / "streams.db"
    folder = f"durable-agents-{os.getuid()}" if hasattr(os, "getuid") else "durable-agents"
    where = f"{app_name(settings.streams)}-{task_hub(settings.task_hub)}"
    return Path(tempfile.gettempdir()) / folder / where / "streams.db"


def _default_folders(file: Path) -> list[Path]:
    """The folders `default_stream_path` creates, outermost first."""
    if file.parent.parent.parent == Path(tempfile.gettempdir()):
        return [file.parent.parent, file.parent]  # durable-agents-<uid>/<app>-<hub>/
    return [file.parent]


def private_folder(folder: Path) -> None:
    """Create `folder` (and its parents) for this user alone; refuse one another user owns, or one
    others may write to (a folder made in advance in a shared temp dir could be read or swapped)."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)  # (parents: the umask's mode)
    if not hasattr(os, "getuid"):
        return
    info = folder.stat()
    if info.st_uid != os.getuid():
        raise HostingConfigurationError(
            f"the stream store folder {folder} belongs to another user (uid {info.st_uid}); "
            f"remove it or set {PATH_ENV}"
        )
    if info.st_mode & 0o077:
        folder.chmod(0o700)


log = logging.getLogger("hosting.streams")

_lock = threading.Lock()
_stores: dict[tuple[str, ...], StreamStore] = {}


def stream_store_from_env() -> StreamStore:
    """`stream_store` of the settings in the environment (for code that runs without `build_app`)."""
    return stream_store(HostingSettings.load())


def stream_store(settings: HostingSettings) -> StreamStore:
    """The stream store the settings name: Redis when `DURABLE_AGENTS_STREAM_REDIS` is set; in
    Azure (``WEBSITE_INSTANCE_ID``) without it none that serves (`UnsharedStreamStore`: an
    instance's own file would not reach the app's other instances); else the embedded SQLite
    store. One instance per configuration in a process."""
    streams = settings.streams
    retention = streams.retention_seconds
    url, entra, cluster = streams.redis, streams.redis_entra, streams.redis_cluster
    if url:
        prefix = key_prefix(settings)
        config: tuple[str, ...] = ("redis", url, str(entra), str(cluster), str(retention), prefix)
    elif streams.instance_id:
        config = ("unshared", str(retention))
    else:
        config = ("sqlite", streams.path or str(default_stream_path(settings)), str(retention))
    with _lock:
        store = _stores.get(config)
        if store is None:
            store = _stores[config] = _create(config, entra, cluster, retention, defaulted=not streams.path)
    return store


def _create(
    config: tuple[str, ...], entra: bool, cluster: bool, retention: float, *, defaulted: bool
) -> StreamStore:
    kind, where = config[0], config[1]
    if kind == "redis":
        if not where.startswith(("redis://", "rediss://", "unix://")):
            raise HostingConfigurationError(f"{REDIS_ENV} must be a redis://, rediss:// or unix:// URL")
        from ._entra import EntraIdCredentials
        from ._redis import RedisStreamStore

        credentials = EntraIdCredentials() if entra else None
        return RedisStreamStore(
            where, retention, credential_provider=credentials, cluster=cluster or None, prefix=config[-1]
        )
    if kind == "unshared":
        # Logged once per process, at startup: the app works, but no run can be streamed.
        log.error(
            "streaming is off: this app runs in Azure (%s is set) without %s, and the embedded "
            "stream store would not reach the app's other instances; streaming requests are "
            "refused with 503 storage_unavailable until %s names a Redis server",
            INSTANCE_ENV, REDIS_ENV, REDIS_ENV,
        )
        from ._unshared import UnsharedStreamStore

        return UnsharedStreamStore(retention)
    from ._sqlite import SqliteStreamStore

    if defaulted:
        # The default's folders: this user's alone (the file itself is created owner-only).
        for folder in _default_folders(Path(where)):
            private_folder(folder)
    return SqliteStreamStore(where, retention)
