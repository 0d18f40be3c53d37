"""hosting reads its app settings in one place, once: `HostingSettings` (hosting/_settings.py), which
`build_app` loads and hands down. No other module of hosting reads the environment."""

from __future__ import annotations

import ast
import pathlib
from datetime import timedelta

import pytest
from hosting_support import make_agents

import hosting._settings
from agents.testing import ModelServer
from hosting import build_app
from hosting._settings import HostingSettings, current

ROOT = pathlib.Path(__file__).resolve().parents[2]

ALLOWED = {
    "hosting/_settings.py": "the settings module: it reads them",
    "hosting/_hub.py": "app_root: the script root the Functions host sets for its worker process",
    "hosting/_telemetry.py": "the OpenTelemetry SDK and the Azure Monitor distro read OTEL_* themselves",
}
"""The modules that may read the environment, each with its reason."""


def _reads_environ(tree: ast.AST) -> bool:
    names = ("environ", "getenv", "environb", "putenv")
    for node in ast.walk(tree):
        attribute = isinstance(node, ast.Attribute) and node.attr in names
        if attribute and isinstance(node.value, ast.Name) and node.value.id == "os":  # type: ignore[attr-defined]
            return True
        imported = node.names if isinstance(node, ast.ImportFrom) and node.module == "os" else []
        if any(alias.name in names for alias in imported):
            return True
    return False


def test_no_hosting_module_reads_the_environment_but_the_settings() -> None:
    readers = sorted(
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "hosting").rglob("*.py")
        if _reads_environ(ast.parse(path.read_text(encoding="utf-8")))
    )
    assert readers == sorted(ALLOWED), readers


def test_the_app_reads_its_settings_once_when_built(
    model: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hosting._settings, "_installed", None)
    monkeypatch.setenv("DURABLE_AGENTS_SESSION_TTL", "60")
    monkeypatch.setenv("DURABLE_AGENTS_WEBHOOK_HOSTS", "hooks.example.com")
    build_app(make_agents(model))
    read = current()
    assert read.lifecycle.ttl_for("assistant") == timedelta(seconds=60)
    assert read.webhooks.hosts == "hooks.example.com"
    # A change after startup is not seen until the app starts again (each worker process builds it).
    monkeypatch.setenv("DURABLE_AGENTS_SESSION_TTL", "120")
    assert current() is read and current().lifecycle.ttl_for("assistant") == timedelta(seconds=60)
    assert HostingSettings.load().lifecycle.session_ttl == 120


def test_settings_keep_their_documented_names_and_defaults() -> None:
    settings = HostingSettings.load({})
    assert settings.http.max_session_bytes == 960 * 1024 and settings.http.public_origin is None
    assert settings.streams.retention_seconds == 3600 and settings.streams.heartbeat_seconds == 15
    assert (settings.archive.archive_at_bytes, settings.archive.keep_bytes) == (40960, 16384)
    assert settings.mcp.wait_seconds == 200 and settings.mcp.tools is None
    assert (settings.webhooks.attempts, settings.webhooks.enabled) == (8, False)
    assert settings.lifecycle.approval_timeout == 86400
    assert settings.lifecycle.ttl_for("a") == timedelta(days=30)
    assert settings.limits.turn_deadline == 180 and settings.task_hub == "TestHubName"
    given = HostingSettings.load(
        {
            "DURABLE_AGENTS_WEBHOOK_SECRET": "hush-hush",
            "DURABLE_AGENTS_WEBHOOK_HOSTS": " a.example ",
            "WEBSITE_HOSTNAME": "x.net",
        }
    )
    assert given.webhooks.enabled and given.webhooks.hosts == "a.example"
    assert given.http.public_origin == "https://x.net"
    assert "hush" not in repr(given) and given.webhooks.secret_bytes == b"hush-hush"  # never in a repr
