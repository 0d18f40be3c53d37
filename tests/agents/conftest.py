"""Fixtures for the agents runtime tests: model settings aimed at the local scripted server, and
long-term memory stores of both backends (SQLite in a temp dir, Azure Table Storage on Azurite)."""

from __future__ import annotations

import pathlib
import uuid
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
from azurite_support import azurite  # noqa: F401 - the fixture

from agents import ModelEnv, ModelSettings, RetryPolicy, StorageConnection, close_model_clients
from agents.memory import DEFAULT_MAX_ITEMS, MemoryStore, SqliteMemoryStore, TableMemoryStore
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


MakeStore = Callable[..., MemoryStore]
"""Makes a memory store (the make_memory_store fixture)."""


@pytest.fixture(params=["sqlite", "table"])
async def make_memory_store(
    request: pytest.FixtureRequest, tmp_path: pathlib.Path
) -> AsyncIterator[MakeStore]:
    """Makes memory stores of one backend (the parameter): every store made in one test shares one
    SQLite file, or one table of Azurite's Table service (as the app's instances would)."""
    connection = None
    if request.param == "table":
        azurite = request.getfixturevalue("azurite")
        connection = StorageConnection("table", connection_string=azurite.connection_string)
    table = f"memory{uuid.uuid4().hex}"
    made: list[MemoryStore] = []

    def make(max_items: int = DEFAULT_MAX_ITEMS) -> MemoryStore:
        store: MemoryStore
        if connection is None:
            store = SqliteMemoryStore(tmp_path / "memory.db", max_items=max_items)
        else:
            store = TableMemoryStore(connection, table, max_items=max_items)
        made.append(store)
        return store

    yield make
    for store in made:
        if isinstance(store, TableMemoryStore):
            await store.close()
