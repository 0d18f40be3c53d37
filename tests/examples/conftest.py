"""Fixtures of the examples' tests: the test agents with the review workflow wired in, served by
a local host, and the hosting tests' HTTP driver.

The examples are hosted apps, so their tests drive them with the hosting tests' support module
(real `azure.functions.HttpRequest` objects, entities through the batch protocol); that folder is
put on the import path here rather than copying it.
"""

from __future__ import annotations

import pathlib
import sys
from collections.abc import AsyncIterator
from typing import Any

import azure.durable_functions as df
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "hosting"))

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
def review_app(model_server: ModelServer) -> df.DFApp:
    """The test agents (assistant, writer, reviewer) with the review workflow, built once."""
    return build_app(
        make_agents(model_server),
        settings=ApiSettings(public_base_url="http://localhost:7071"),
        extensions=[review_workflow()],
    )


@pytest.fixture
def app(review_app: df.DFApp, model: ModelServer) -> df.DFApp:
    """The app, with the model server's script emptied for this test."""
    return review_app


@pytest.fixture
async def host(app: df.DFApp, tmp_path: pathlib.Path) -> AsyncIterator[Any]:
    """A local Functions + Durable host serving the app."""
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
