"""The task hub as the Durable extension resolves it, and the archive container and memory table
named after it: an invalid derived name is made valid, the settings win (tests/e2e/test_e2e_history_stores.py
shows two apps on one account getting containers of their own)."""

from __future__ import annotations

import logging
import re

import pytest
from hosting_support import make_agents

import agents.memory._settings as memory_settings
from agents import Agent, AgentConfigurationError, ModelSettings
from agents.memory import TableMemoryStore, memory_store_from_env
from agents.testing import ModelServer
from hosting import build_app
from hosting._hub import HUB_OVERRIDE_ENV, history_container, memory_table, sanitized_hub, task_hub
from hosting.archive import store_from_env
from hosting.archive._azure import AzureBlobChunkStore

ACCOUNT = "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=a2V5;EndpointSuffix=core.windows.net"
CONTAINER = re.compile(r"(?=.{3,63}$)[a-z0-9]+(-[a-z0-9]+)*")
HUB = re.compile(r"[A-Za-z][A-Za-z0-9]{2,44}")


def container_of(settings: dict[str, str]) -> str:
    store = store_from_env({"AzureWebJobsStorage": ACCOUNT, **settings})
    assert isinstance(store, AzureBlobChunkStore)
    return store.container


def test_two_apps_get_their_own_hub() -> None:
    one, two = {"WEBSITE_SITE_NAME": "agents-staging"}, {"WEBSITE_SITE_NAME": "agents-prod"}
    assert (task_hub(one), task_hub(two)) == ("agentsstaging", "agentsprod")
    assert task_hub({}) == "TestHubName"  # off Azure, as the extension


@pytest.mark.parametrize(
    ("site", "hub"),
    [
        ("my-app-01", "myapp01"),
        ("1st-app", "t1stapp"),  # a table name starts with a letter
        ("ab", "abHub"),  # at least 3 characters
        ("a" * 60, "a" * 45),
        ("---", "DefaultTaskHub"),
    ],
)
def test_an_invalid_derived_name_is_made_valid(site: str, hub: str) -> None:
    assert task_hub({"WEBSITE_SITE_NAME": site}) == hub == sanitized_hub(site)
    assert HUB.fullmatch(hub)
    assert CONTAINER.fullmatch(container_of({"WEBSITE_SITE_NAME": site}))


def test_container_names_are_normalised_from_any_hub_name() -> None:
    for hub in ("My_Hub--Name", "-x-", "\u00dcn\u00efcode hub", "A" * 80, "--"):
        name = history_container(hub)
        assert CONTAINER.fullmatch(name), (hub, name)
    assert history_container("My_Hub--Name") == "my-hub-name-history"


def test_the_hub_setting_and_the_container_setting_win() -> None:
    settings = {"WEBSITE_SITE_NAME": "agents-prod", HUB_OVERRIDE_ENV: "ProdHub"}
    assert task_hub(settings) == "ProdHub"
    assert container_of(settings) == "prodhub-history"
    assert container_of({**settings, "DURABLE_AGENTS_HISTORY_CONTAINER": "agent-history"}) == "agent-history"
    # A whole %SETTING% is read from that setting, as the host's name resolver does.
    assert task_hub({HUB_OVERRIDE_ENV: "%MY_HUB%", "MY_HUB": "FromSetting"}) == "FromSetting"


def test_memory_tables_are_per_app_and_valid() -> None:
    table = re.compile(r"[A-Za-z][A-Za-z0-9]{2,62}")
    assert memory_table(task_hub({"WEBSITE_SITE_NAME": "agents-prod"})) == "agentsprodMemory"
    assert memory_table("durableagents") == "durableagentsMemory"
    for hub in ("1st", "My_Hub--Name", "\u00dcn\u00efcode hub", "A" * 80, "--", "%UNSET%"):
        assert table.fullmatch(memory_table(hub)), hub
    assert memory_table("1st") == "t1stMemory" and memory_table("--") == "agentsMemory"


def test_the_app_gives_memory_its_table_and_refuses_a_bad_memory_setting(
    model: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_settings, "_default", None)
    monkeypatch.setattr(memory_settings, "_configured", None)
    monkeypatch.setenv("AzureWebJobsStorage", ACCOUNT)
    monkeypatch.setenv("WEBSITE_SITE_NAME", "agents-prod")
    monkeypatch.delenv(HUB_OVERRIDE_ENV, raising=False)
    build_app(make_agents(model))
    store = memory_store_from_env()
    assert isinstance(store, TableMemoryStore) and store.table == "agentsprodMemory"
    monkeypatch.setenv("DURABLE_AGENTS_MEMORY_STORE", "tables")
    with pytest.raises(AgentConfigurationError, match="DURABLE_AGENTS_MEMORY_STORE"):
        build_app(make_agents(model))


def test_the_app_logs_each_agents_model_and_endpoint_at_startup_without_its_secrets(
    model: ModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    # With a real model, the first thing to check in a log is which endpoint and model it reached.
    caplog.set_level(logging.INFO, logger="hosting")
    secret = ModelSettings(model="gpt-x", base_url="https://user:pw@models.example.com/v1?sig=s3cret",
                           api_key="key-s3cret")
    build_app([*make_agents(model), Agent(name="remote", instructions="x", model=secret)])
    lines = [r.getMessage() for r in caplog.records if r.name == "hosting"]
    local = model.base_url.rstrip("/")
    assert f"agent 'assistant': model 'test-model' at {local} (openai, an API key)" in lines
    assert "agent 'remote': model 'gpt-x' at https://models.example.com/v1 (openai, an API key)" in lines
    assert not [line for line in lines if "s3cret" in line or "pw@" in line]
