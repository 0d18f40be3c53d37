"""Memory in Azure Table Storage through the real host: with `AzureWebJobsStorage` a storage
account (Azurite's, by connection string) and no memory setting, the app keeps each user's memory
in the table named after its task hub, shared by its worker processes (Flex Consumption's
topology, two processes a group), and a user's next session sees it while another user's never does."""

from __future__ import annotations

import json
import pathlib
import uuid
from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest
from azurite_support import Azurite, azurite  # noqa: F401 - the fixture
from e2e_support import Client, HostProcess

from agents import StorageConnection
from agents.memory import MemoryNamespace, TableMemoryStore
from agents.testing import ModelRequest, ModelServer, Reply

PREFERENCE = "The traveller prefers aisle seats."
TABLE = "TestHubNameMemory"  # the local host's task hub (the extension's default off Azure) + "Memory"


@pytest.fixture(scope="module")
def storage(request: pytest.FixtureRequest) -> str:
    """The connection string of the module's Azurite: the app's storage account here."""
    server: Azurite = request.getfixturevalue("azurite")
    return server.connection_string


@pytest.fixture(scope="module")
def table_host(
    storage: str, model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostProcess]:
    root = tmp_path_factory.mktemp("memory-table-host")
    env = {
        "AzureWebJobsStorage": storage,
        "DURABLE_AGENTS_HISTORY_STORE": "files",
        "DEVHOST_TOPOLOGY": "flex",
        "FUNCTIONS_WORKER_PROCESS_COUNT": "2",
    }
    host = HostProcess(root / "data", model_server.base_url, root / "host.log", extra_env=env).start()
    try:
        yield host
    finally:
        host.stop()


@pytest.fixture
async def client(table_host: HostProcess) -> AsyncIterator[Client]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        yield Client(session, table_host.url)


def _system(request: ModelRequest) -> str:
    return "\n".join(m.text for m in request.messages if m.role in ("system", "developer"))


async def test_memory_is_kept_in_the_apps_table_and_follows_its_user(
    client: Client, model: ModelServer, storage: str
) -> None:
    u1, u2 = f"u1-{uuid.uuid4().hex[:8]}", f"u2-{uuid.uuid4().hex[:8]}"
    model.script(
        Reply.tool_call("remember", {"fact": PREFERENCE}),
        Reply.text("Noted."),
        Reply.text("Aisle seat it is."),
        Reply.text("Where to?"),
    )
    first = await client.run("concierge", "I always want an aisle seat.", user_id=u1)
    assert first.status == 200, first.body
    second = await client.run("concierge", "Book me a flight to Oslo.", user_id=u1)
    assert second.status == 200, second.body
    block = _system(model.requests[2]).split("<user-memory>\n", 1)[1].split("\n</user-memory>", 1)[0]
    assert [f["text"] for f in json.loads(block)] == [PREFERENCE]
    other = await client.run("concierge", "Book me a flight to Oslo.", user_id=u2)
    assert other.status == 200 and "aisle" not in json.dumps([m.text for m in model.requests[3].messages])
    # The fact is in the app's table, in u1's partition, and nowhere for u2.
    store = TableMemoryStore(StorageConnection("table", connection_string=storage), TABLE)
    try:
        [hit] = await store.search(MemoryNamespace(u1))
        assert hit.item.text == PREFERENCE and hit.item.metadata["agent"] == "concierge"
        assert await store.search(MemoryNamespace(u2)) == []
    finally:
        await store.close()


def test_the_host_did_not_fall_back_to_a_file(table_host: HostProcess) -> None:
    assert not (pathlib.Path(table_host.data_dir) / "memory" / "memory.db").exists()
