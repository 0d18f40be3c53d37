"""Fixtures for the model server tests: clients bound to the shared scripted server or a fresh offline one."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from openai import AsyncOpenAI, OpenAI

from agents.testing import ModelServer


@pytest.fixture
def client(model: ModelServer) -> Iterator[OpenAI]:
    """A synchronous OpenAI client on the shared scripted server, without retries."""
    with OpenAI(base_url=model.base_url, api_key="test", max_retries=0, timeout=10) as c:
        yield c


@pytest.fixture
async def aclient(model: ModelServer) -> AsyncIterator[AsyncOpenAI]:
    """An async OpenAI client on the shared scripted server, without retries."""
    async with AsyncOpenAI(base_url=model.base_url, api_key="test", max_retries=0, timeout=10) as c:
        yield c


@pytest.fixture(scope="module")
def offline_server() -> Iterator[ModelServer]:
    with ModelServer(mode="offline") as server:
        yield server


@pytest.fixture
def offline(offline_server: ModelServer) -> Iterator[ModelServer]:
    offline_server.reset()
    yield offline_server
    offline_server.reset()


@pytest.fixture
def offline_client(offline: ModelServer) -> Iterator[OpenAI]:
    with OpenAI(base_url=offline.base_url, api_key="test", max_retries=0, timeout=10) as c:
        yield c
