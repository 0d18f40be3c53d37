"""Which memory store the app settings choose, and how the Table store reaches its account: a
connection string, or an identity-based connection as Functions names it (no real Azure: the
clients are built, never called)."""

from __future__ import annotations

import pathlib

import pytest
from azure.identity.aio import DefaultAzureCredential, ManagedIdentityCredential

import agents.memory as memory
from agents import AgentConfigurationError, StorageConnection
from agents.memory import (
    MemorySettings,
    SqliteMemoryStore,
    TableMemoryStore,
    memory_store_from_env,
    use_memory_settings,
)

STORE, TABLE, STORAGE = "DURABLE_AGENTS_MEMORY_STORE", "DURABLE_AGENTS_MEMORY_TABLE", "AzureWebJobsStorage"
ACCOUNT = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net"


def _settings(env: dict[str, str], **kwargs: str) -> MemorySettings:
    return MemorySettings.from_env(env, **kwargs)


def test_sqlite_locally_table_on_a_real_account() -> None:
    assert _settings({}).store == "sqlite"
    assert _settings({"AzureWebJobsStorage": "UseDevelopmentStorage=true"}).store == "sqlite"
    assert _settings({"AzureWebJobsStorage": " UseDevelopmentStorage = true "}).store == "sqlite"
    real = _settings({"AzureWebJobsStorage": ACCOUNT})
    assert real.store == "table" and real.connection == StorageConnection("table", connection_string=ACCOUNT)
    assert real.table == "DurableAgentsMemory"
    assert _settings({"AzureWebJobsStorage": ACCOUNT}, default_table="prodMemory").table == "prodMemory"
    # A named SQLite file is a choice: it stays SQLite.
    named = _settings({"AzureWebJobsStorage": ACCOUNT, "DURABLE_AGENTS_MEMORY_PATH": "/data/m.db"})
    assert named.store == "sqlite" and named.path == pathlib.Path("/data/m.db")
    # The explicit choice wins either way.
    assert _settings({STORAGE: ACCOUNT, STORE: "SQLite"}).store == "sqlite"
    local = _settings({STORAGE: "UseDevelopmentStorage=true", STORE: "table"})
    assert local.store == "table" and local.connection is not None
    assert "AccountKey" not in repr(real)  # settings may be logged; the key never is


def test_identity_based_connection_with_a_user_assigned_identity() -> None:
    env = {
        "AzureWebJobsStorage__accountName": "acct",
        "AzureWebJobsStorage__credential": "managedidentity",
        "AzureWebJobsStorage__clientId": "client-1",
        "AzureWebJobsStorage__blobServiceUri": "https://acct.blob.core.windows.net",
    }
    settings = _settings(env, default_table="durableagentsMemory")
    assert settings.store == "table"
    assert settings.connection == StorageConnection("table",
        endpoint="https://acct.table.core.windows.net", client_id="client-1", managed_identity=True
    )
    store = settings.open()
    assert isinstance(store, TableMemoryStore) and store.table == "durableagentsMemory"
    client = store.connection.table_client(store.table)
    assert client.url.startswith("https://acct.table.core.windows.net")
    assert client.table_name == "durableagentsMemory"
    assert isinstance(client.credential, ManagedIdentityCredential)


def test_service_uri_wins_and_without_managedidentity_default_credential() -> None:
    env = {
        "Mem__tableServiceUri": "https://custom.example.net/",
        "Mem__accountName": "ignored",
        "Mem__clientId": "client-2",
        "DURABLE_AGENTS_MEMORY_CONNECTION": "Mem",
        "DURABLE_AGENTS_MEMORY_TABLE": "agentFacts",
    }
    settings = _settings(env)
    assert settings.store == "table" and settings.table == "agentFacts"
    expected = StorageConnection("table", endpoint="https://custom.example.net", client_id="client-2")
    assert settings.connection == expected
    assert isinstance(settings.connection.credential(), DefaultAzureCredential)
    # Blob-only identity settings are no Table connection: SQLite stays the default.
    blob_only = {"AzureWebJobsStorage__blobServiceUri": "https://a.blob.core.windows.net"}
    assert _settings(blob_only).store == "sqlite"
    assert StorageConnection("table", connection_string=ACCOUNT).credential() is None


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"DURABLE_AGENTS_MEMORY_STORE": "cosmos"}, "DURABLE_AGENTS_MEMORY_STORE"),
        ({"DURABLE_AGENTS_MEMORY_STORE": "table"}, "AzureWebJobsStorage__tableServiceUri"),
        ({STORAGE: ACCOUNT, TABLE: "my-table"}, TABLE),
        ({STORAGE: ACCOUNT, TABLE: "Tables"}, TABLE),
        ({STORAGE: ACCOUNT, TABLE: "1abc"}, TABLE),
        (
            {"AzureWebJobsStorage__accountName": "a", "AzureWebJobsStorage__credential": "secret"},
            "AzureWebJobsStorage__credential",
        ),
    ],
)
def test_a_bad_setting_is_named(env: dict[str, str], named: str) -> None:
    with pytest.raises(AgentConfigurationError, match=named):
        MemorySettings.from_env(env)


def test_the_hosts_settings_choose_the_processes_store(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory._settings, "_default", None)
    monkeypatch.setattr(memory._settings, "_configured", None)
    use_memory_settings(MemorySettings.from_env({"AzureWebJobsStorage": ACCOUNT}, default_table="appMemory"))
    store = memory_store_from_env()
    assert isinstance(store, TableMemoryStore) and store.table == "appMemory"
    assert memory_store_from_env() is store  # one per process
    use_memory_settings(MemorySettings.from_env({"DURABLE_AGENTS_MEMORY_PATH": str(tmp_path / "m.db")}))
    assert isinstance(memory_store_from_env(), SqliteMemoryStore)
