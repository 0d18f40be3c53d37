"""The public surface of `hosting.streams`, and the settings that pick and tune its store."""

from __future__ import annotations

import asyncio
import os
import pathlib

import pytest

import hosting.streams as streams
from hosting._errors import HostingConfigurationError
from hosting.http._sse import heartbeat_from_env
from hosting.streams import SqliteStreamStore, retention_from_env, stream_store_from_env
from hosting.streams._redis import RedisStreamStore


def test_all_is_pinned() -> None:
    assert sorted(streams.__all__) == [
        "APPROVAL_REQUIRED",
        "Admission",
        "DEFAULT_RETENTION_SECONDS",
        "Dispatch",
        "EVENT_STREAM",
        "EntraIdCredentials",
        "PATH_ENV",
        "REDIS_CLUSTER_ENV",
        "REDIS_ENTRA_ENV",
        "REDIS_ENV",
        "RETENTION_ENV",
        "RUN_CANCELLED",
        "RUN_COMPLETED",
        "RUN_FAILED",
        "RUN_RESTARTED",
        "RUN_STARTED",
        "RunCancelled",
        "RunClaim",
        "RunEvents",
        "STEP_STARTED",
        "SqliteStreamStore",
        "StreamConflict",
        "StreamEvent",
        "StreamKey",
        "StreamStore",
        "StreamStoreUnavailable",
        "TERMINAL_TYPES",
        "claim_identity",
        "claimed_user",
        "default_stream_path",
        "event_stream_content",
        "latest_run",
        "retention_from_env",
        "start_run",
        "stream_store",
        "stream_store_from_env",
        "terminal_watch",
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
    redis = stream_store_from_env()
    assert isinstance(redis, RedisStreamStore) and redis.cluster is None, "cluster mode: asked of the server"
    monkeypatch.setenv("DURABLE_AGENTS_STREAM_REDIS_CLUSTER", "true")
    clustered = stream_store_from_env()
    assert isinstance(clustered, RedisStreamStore) and clustered.cluster is True
    monkeypatch.delenv("DURABLE_AGENTS_STREAM_REDIS_CLUSTER")
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


def _default_store(monkeypatch: pytest.MonkeyPatch) -> streams.StreamStore:
    monkeypatch.delenv("DURABLE_AGENTS_STREAM_PATH", raising=False)
    monkeypatch.delenv("DURABLE_AGENTS_STREAM_REDIS", raising=False)
    monkeypatch.delenv("WEBSITE_INSTANCE_ID", raising=False)
    return stream_store_from_env()


def test_the_default_store_lives_in_the_local_hosts_data_dir_for_its_user_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    monkeypatch.setenv("DEVHOST_DATA_DIR", str(tmp_path / "data"))
    store = _default_store(monkeypatch)
    assert isinstance(store, SqliteStreamStore)
    assert store.path.is_relative_to(tmp_path / "data"), store.path
    assert store.path.parent.stat().st_mode & 0o777 == 0o700
    assert store.path.stat().st_mode & 0o777 == 0o600


def test_without_a_host_data_dir_the_default_is_an_owner_only_folder_per_app_and_hub(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    monkeypatch.delenv("DEVHOST_DATA_DIR", raising=False)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setenv("WEBSITE_SITE_NAME", "shop")
    shared = tmp_path / f"durable-agents-{os.getuid()}"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)  # made in advance, open to everyone
    store = _default_store(monkeypatch)
    assert isinstance(store, SqliteStreamStore)
    assert store.path.parent.parent == shared and store.path.parent.name.startswith("shop-")
    assert shared.stat().st_mode & 0o777 == 0o700, "the folder was left open to other users"
    assert store.path.parent.stat().st_mode & 0o777 == 0o700
    assert store.path.stat().st_mode & 0o777 == 0o600
    # The same folder name, made in advance by another user: refused, naming the setting.
    monkeypatch.setattr("os.getuid", lambda: 4242)
    foreign = tmp_path / "durable-agents-4242"
    foreign.mkdir()
    with pytest.raises(HostingConfigurationError, match=r"another user.*DURABLE_AGENTS_STREAM_PATH"):
        _default_store(monkeypatch)


async def test_redis_keys_are_prefixed_by_app_and_task_hub(
    monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    monkeypatch.setenv("DURABLE_AGENTS_STREAM_REDIS", redis_url)
    run = streams.StreamKey("agent", "shared-session", "same-correlation-id")
    monkeypatch.setenv("WEBSITE_SITE_NAME", "staging")
    staging = stream_store_from_env()
    monkeypatch.setenv("WEBSITE_SITE_NAME", "production")
    production = stream_store_from_env()
    try:
        assert await staging.claim(run, streams.RunClaim("staging-request")) is None
        assert await production.claim(run, streams.RunClaim("production-request")) is None, (
            "two apps sharing a cache saw each other's run"
        )
        await staging.append(run, streams.StreamEvent(1, "run.started", {}))
        assert await production.last(run) is None
    finally:
        await staging.aclose()
        await production.aclose()


def test_in_azure_without_redis_streaming_is_refused_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("DURABLE_AGENTS_STREAM_REDIS", raising=False)
    monkeypatch.setenv("WEBSITE_INSTANCE_ID", "an-azure-instance")
    monkeypatch.setenv("DURABLE_AGENTS_STREAM_RETENTION_SECONDS", "4321")  # a configuration of its own
    with caplog.at_level("ERROR", logger="hosting.streams"):
        store = stream_store_from_env()
        assert stream_store_from_env() is store
    assert [r.getMessage() for r in caplog.records if "DURABLE_AGENTS_STREAM_REDIS" in r.getMessage()], (
        "no startup error names the setting"
    )
    assert len(caplog.records) == 1, "the error is logged once"
    key = streams.StreamKey("a", "s", "c")
    for read in (store.exists(key), store.claim(key, streams.RunClaim(None)), store.last(key)):
        with pytest.raises(streams.StreamStoreUnavailable, match="DURABLE_AGENTS_STREAM_REDIS") as raised:
            asyncio.run(read)
        assert raised.value.retry_after is None
