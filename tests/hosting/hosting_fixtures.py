"""Fixtures of the hosting tests (and of tests/examples, which drive the same app): the app hosting
the test agents with the review workflow wired in, a local host, HTTP drivers. The conftest.py of
each folder imports them."""

from __future__ import annotations

import json
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import azure.durable_functions as df
import pytest
from hosting_support import ROOT, Api, make_agents

from agents.testing import ModelServer
from examples.review import review_workflow
from hosting import ApiSettings, build_app


@pytest.fixture(autouse=True)
def public_origin(monkeypatch: pytest.MonkeyPatch) -> None:
    """What func start sets: apps built in a test hand out URLs under http://localhost:7071."""
    monkeypatch.delenv("DURABLE_AGENTS_PUBLIC_BASE_URL", raising=False)
    monkeypatch.setenv("WEBSITE_HOSTNAME", "localhost:7071")


@pytest.fixture(scope="session")
def hosted_app(model_server: ModelServer) -> df.DFApp:
    """The function app hosting the test agents (built once; the model server is reset per test)."""
    # The public origin func start announces (WEBSITE_HOSTNAME=localhost:7071): Location headers
    # point there, whatever Host header a request carries.
    # With the review workflow wired in as function_app.py does, so every route kind is served.
    return build_app(
        make_agents(model_server),
        settings=ApiSettings(public_base_url="http://localhost:7071"),
        extensions=[review_workflow()],
    )


@pytest.fixture
def app(hosted_app: df.DFApp, model: ModelServer) -> df.DFApp:
    """The app, with the model server's script emptied for this test."""
    return hosted_app


@pytest.fixture
async def host(app: df.DFApp, tmp_path: pathlib.Path) -> AsyncIterator[Any]:
    """A local Functions + Durable host serving the app (entities run through it)."""
    from devhost import LocalHost

    local = LocalHost(app, tmp_path / "devhost", project_dir=ROOT)
    await local.start()
    try:
        yield local
    finally:
        await local.stop()


@pytest.fixture
def api(app: df.DFApp, host: Any) -> Api:
    """HTTP calls into the app's functions with a durable client binding backed by the host."""
    return Api(app, host.client_binding())


@pytest.fixture
def offline_api(app: df.DFApp) -> Api:
    """HTTP calls with a client binding that points at a closed port: a 4xx from it proves the
    request was rejected before any storage call (a call would have answered 503)."""
    binding = json.dumps(
        {
            "taskHubName": "none",
            "creationUrls": {},
            "managementUrls": {},
            "rpcBaseUrl": "http://127.0.0.1:9/runtime/webhooks/durabletask/",
        }
    )
    return Api(app, binding)
