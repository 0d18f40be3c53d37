"""Fixtures for the agents runtime tests: model settings aimed at the local scripted server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from agents import ModelEnv, ModelSettings, RetryPolicy, close_model_clients
from agents.testing import ModelServer

# Short but real backoff, so fault tests take milliseconds.
FAST_RETRY = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05, deadline=10.0)


@pytest.fixture(autouse=True)
def clean_model_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No model endpoint from the developer's shell leaks into a test."""
    for name in ModelEnv:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DURABLE_AGENTS_ALLOW_MODEL_REQUESTS", "0")
    yield


@pytest.fixture(autouse=True)
async def close_clients() -> AsyncIterator[None]:
    """Close the model clients a test's event loop opened."""
    yield
    await close_model_clients()


@pytest.fixture
def settings(model: ModelServer) -> ModelSettings:
    """Chat Completions settings on the scripted server with fast retries."""
    return ModelSettings(model="test-model", base_url=model.base_url, timeout=5.0, retry=FAST_RETRY)


@pytest.fixture
def responses_settings(settings: ModelSettings) -> ModelSettings:
    """The same on the Responses API."""
    return settings.replace(wire_api="responses")
