"""The chunk store contract, on the embedded file store and on Azure Blob Storage (Azurite)."""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator

import pytest
from azurite_support import Azurite, azurite  # noqa: F401 - the fixture

from agents import StorageConnection
from hosting.archive import AzureBlobChunkStore, ChunkStore, FileChunkStore, store_from_env
from hosting.archive._store import delete_prefix


@pytest.fixture(params=["files", "azure"])
async def store(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> AsyncIterator[ChunkStore]:
    if request.param == "files":
        chunks: ChunkStore = FileChunkStore(tmp_path / "chunks")
    else:
        server: Azurite = request.getfixturevalue("azurite")
        chunks = AzureBlobChunkStore(
            StorageConnection("blob", connection_string=server.connection_string),
            tmp_path.name[:40].lower().replace("_", "-"),
        )
    yield chunks
    await chunks.close()


async def test_put_get_list_delete(store: ChunkStore) -> None:
    assert await store.list_paths("dafx-a/") == []  # nothing yet (no container, no folder)
    await store.put("dafx-a/s-one/0123456789abcdef/00000000-aa", b"first")
    await store.put("dafx-a/s-one/0123456789abcdef/00000001-bb", b"\x00second")
    await store.put("dafx-a/s-two/0123456789abcdef/00000000-cc", b"other")
    await store.put("dafx-a/s-one/0123456789abcdef/00000000-aa", b"first")  # writing again is harmless
    assert await store.get("dafx-a/s-one/0123456789abcdef/00000001-bb") == b"\x00second"
    assert await store.get("dafx-a/s-one/0123456789abcdef/00000002-dd") is None
    assert await store.list_paths("dafx-a/s-one/") == [
        "dafx-a/s-one/0123456789abcdef/00000000-aa",
        "dafx-a/s-one/0123456789abcdef/00000001-bb",
    ]
    assert await delete_prefix(store, "dafx-a/s-one/") == 2
    await store.delete("dafx-a/s-one/0123456789abcdef/00000000-aa")  # already gone: fine
    assert await store.list_paths("dafx-a/") == ["dafx-a/s-two/0123456789abcdef/00000000-cc"]


def test_two_apps_on_one_storage_account_get_containers_of_their_own() -> None:
    # Named after each app's task hub, which the Durable extension derives from the app's name.
    real = "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=a2V5;EndpointSuffix=core.windows.net"
    containers = []
    for app in ("agents-staging", "agents-prod", "1-bad_Name--x"):
        chosen = store_from_env({"AzureWebJobsStorage": real, "WEBSITE_SITE_NAME": app})
        assert isinstance(chosen, AzureBlobChunkStore)
        containers.append(chosen.container)
    assert containers == ["agentsstaging-history", "agentsprod-history", "t1badnamex-history"]


def test_file_paths_cannot_leave_the_folder(tmp_path: pathlib.Path) -> None:
    files = FileChunkStore(tmp_path)
    for bad in ("../x", "a/../../x", "/etc/passwd", "a//b", "a/./b", ""):
        with pytest.raises(ValueError):
            files._file(bad)


def test_settings_choose_the_store(tmp_path: pathlib.Path) -> None:
    assert isinstance(store_from_env({"DURABLE_AGENTS_HISTORY_DIR": str(tmp_path)}), FileChunkStore)
    assert isinstance(store_from_env({"AzureWebJobsStorage": "UseDevelopmentStorage=true"}), FileChunkStore)
    real = "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=a2V5;EndpointSuffix=core.windows.net"
    chosen = store_from_env({"AzureWebJobsStorage": real, "WEBSITE_SITE_NAME": "agents-prod"})
    assert isinstance(chosen, AzureBlobChunkStore) and chosen.container == "agentsprod-history"
    identity = store_from_env(
        {"AzureWebJobsStorage__accountName": "acct", "AzureWebJobsStorage__clientId": "id"}
    )
    assert isinstance(identity, AzureBlobChunkStore)
    assert identity.connection.endpoint == "https://acct.blob.core.windows.net"
    assert identity.connection.client_id == "id"
    separate = store_from_env(
        {
            "DURABLE_AGENTS_HISTORY_STORE": "azure",
            "DURABLE_AGENTS_HISTORY_CONNECTION": "History",
            "History__blobServiceUri": "https://h.blob.core.windows.net",
            "DURABLE_AGENTS_HISTORY_CONTAINER": "c",
        }
    )
    assert isinstance(separate, AzureBlobChunkStore) and separate.container == "c"
    from hosting import HostingError

    with pytest.raises(HostingError, match="History"):
        store_from_env(
            {"DURABLE_AGENTS_HISTORY_STORE": "azure", "DURABLE_AGENTS_HISTORY_CONNECTION": "History"}
        )
    with pytest.raises(HostingError, match="files"):
        store_from_env({"DURABLE_AGENTS_HISTORY_STORE": "s3"})
