"""The public surface of `hosting.streams`, and the settings that pick and tune its store."""

from __future__ import annotations

import pathlib

import pytest

import hosting.streams as streams
from hosting._errors import HostingConfigurationError
from hosting.http._sse import heartbeat_from_env
from hosting.streams import SqliteStreamStore, retention_from_env, stream_store_from_env
from hosting.streams._redis import RedisStreamStore


def test_all_is_pinned() -> None:
    assert sorted(streams.__all__) == [
        "DEFAULT_RETENTION_SECONDS",
        "EntraIdCredentials",
        "PATH_ENV",
        "REDIS_ENTRA_ENV",
        "REDIS_ENV",
        "RETENTION_ENV",
        "RUN_COMPLETED",
        "RUN_FAILED",
        "RUN_RESTARTED",
        "RUN_STARTED",
        "RunClaim",
        "RunEvents",
        "SqliteStreamStore",
        "StreamConflict",
        "StreamEvent",
        "StreamKey",
        "StreamStore",
        "TERMINAL_TYPES",
        "default_stream_path",
        "retention_from_env",
        "start_run",
        "stream_store_from_env",
    ]
    for name in streams.__all__:
        assert getattr(streams, name) is not None


def test_the_settings_pick_the_backend(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.setenv("DURABLE_AGENTS_STREAM_PATH", str(tmp_path / "s.db"))
    monkeypatch.delenv("DURABLE_AGENTS_STREAM_REDIS", raising=False)
    embedded = stream_store_from_env()
    assert isinstance(embedded, SqliteStreamStore) and embedded.path == tmp_path / "s.db"
    assert stream_store_from_env() is embedded, "one store per configuration in a process"
    monkeypatch.setenv("DURABLE_AGENTS_STREAM_REDIS", "rediss://cache.example:6380/0")
    assert isinstance(stream_store_from_env(), RedisStreamStore)
    monkeypatch.setenv("DURABLE_AGENTS_STREAM_REDIS", "http://not-redis")
    with pytest.raises(HostingConfigurationError, match="DURABLE_AGENTS_STREAM_REDIS"):
        stream_store_from_env()


@pytest.mark.parametrize("raw", ["0", "-5", "soon", "nan", "1e9"])
def test_bad_retention_and_heartbeat_settings_are_refused(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("DURABLE_AGENTS_STREAM_RETENTION_SECONDS", raw)
    monkeypatch.setenv("DURABLE_AGENTS_STREAM_HEARTBEAT_SECONDS", raw)
    with pytest.raises(HostingConfigurationError, match="RETENTION"):
        retention_from_env()
    with pytest.raises(HostingConfigurationError, match="HEARTBEAT"):
        heartbeat_from_env()


def test_settings_in_range_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DURABLE_AGENTS_STREAM_RETENTION_SECONDS", "120")
    monkeypatch.setenv("DURABLE_AGENTS_STREAM_HEARTBEAT_SECONDS", "2.5")
    assert retention_from_env() == 120 and heartbeat_from_env() == 2.5
