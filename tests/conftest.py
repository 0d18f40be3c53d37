"""Shared fixtures for the whole suite (other packages may append theirs below).

Model requests are confined to loopback for the whole test run: the agents runtime refuses any
non-loopback model endpoint while DURABLE_AGENTS_ALLOW_MODEL_REQUESTS is "0", and model settings
from the developer's environment are removed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

os.environ["DURABLE_AGENTS_ALLOW_MODEL_REQUESTS"] = "0"

# A developer's shell may export a real model's settings; the suite must behave the same there as
# on CI, so every test starts from "no model configured" and sets what it needs.
for _name in [n for n in os.environ if n.startswith(("OPENAI_", "AZURE_OPENAI_"))]:
    del os.environ[_name]

if TYPE_CHECKING:
    from agents.testing import ModelServer


@pytest.fixture(scope="session")
def model_server() -> Iterator[ModelServer]:
    """One scripted local model server for the session (use `model` to get it reset per test)."""
    # Imported here so a broken `agents` package fails only the tests that need the server.
    from agents.testing import ModelServer

    with ModelServer(mode="scripted") as server:
        yield server


@pytest.fixture
def model(model_server: ModelServer) -> Iterator[ModelServer]:
    """The session's scripted model server with an empty script, no handler and no history."""
    model_server.reset()
    yield model_server
    model_server.reset()
