"""Fixtures of the end-to-end tests: one real host subprocess for the session, an HTTP client.

The host serves the project's own `function_app.py` (`examples.catalog`'s agents: assistant, concierge,
writer, reviewer) with a function key, its model endpoint being the session's scripted
`ModelServer` (reset before every test by the `model` fixture). Tests use their own session ids,
so sharing one host between them is safe and keeps the suite fast.
"""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator, Iterator

import aiohttp
import httpx
import pytest
from e2e_support import FUNCTION_KEY, Client, HostProcess, free_port
from webhook_support import Receiver

from agents.testing import ModelServer


@pytest.fixture(scope="session")
def e2e_host(model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostProcess]:
    """`python -m devhost` on a free port, data in a temp dir, models from the scripted server."""
    root = tmp_path_factory.mktemp("e2e-host")
    host = HostProcess(root / "data", model_server.base_url, root / "host.log").start()
    try:
        yield host
    finally:
        host.stop()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    """A plain aiohttp client session (large pool: some tests send hundreds of requests at once)."""
    connector = aiohttp.TCPConnector(limit=300)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as session:
        yield session


@pytest.fixture
def client(http: aiohttp.ClientSession, e2e_host: HostProcess, model: ModelServer) -> Client:
    """A client of the shared host, with the model server's script emptied for this test."""
    return Client(http, e2e_host.url)


@pytest.fixture
def host_log(e2e_host: HostProcess) -> pathlib.Path:
    """The shared host's log file (for failure messages)."""
    return e2e_host.log_path


@pytest.fixture(scope="module", params=["sqlite", "redis", "redis-cluster"])
def backend(request: pytest.FixtureRequest) -> dict[str, str]:
    """The stream store settings of a host: the embedded default, the session's real Redis, or
    its real 3-node Redis cluster (named by the setting, as Azure Managed Redis' OSS policy needs)."""
    if request.param == "redis":
        url: str = request.getfixturevalue("redis_url")
        return {"DURABLE_AGENTS_STREAM_REDIS": url, "DURABLE_AGENTS_STREAM_HEARTBEAT_SECONDS": "0.3"}
    if request.param == "redis-cluster":
        cluster: str = request.getfixturevalue("redis_cluster_url")
        return {
            "DURABLE_AGENTS_STREAM_REDIS": cluster,
            "DURABLE_AGENTS_STREAM_REDIS_CLUSTER": "true",
            "DURABLE_AGENTS_STREAM_HEARTBEAT_SECONDS": "0.3",
        }
    return {"DURABLE_AGENTS_STREAM_HEARTBEAT_SECONDS": "0.3"}


@pytest.fixture(scope="module")
def stream_host(
    backend: dict[str, str], model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostProcess]:
    root = tmp_path_factory.mktemp("stream-host")
    host = HostProcess(root / "data", model_server.base_url, root / "host.log", extra_env=backend).start()
    try:
        yield host
    finally:
        host.stop()


@pytest.fixture
async def web() -> AsyncIterator[httpx.AsyncClient]:
    headers = {"x-functions-key": FUNCTION_KEY}
    async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30.0)) as client:
        yield client


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    """A webhook receiver on loopback (tests/e2e/webhook_support.py), one per test module."""
    served = Receiver(free_port()).start()
    yield served
    served.stop()
