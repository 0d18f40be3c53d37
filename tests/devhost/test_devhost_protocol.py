"""Host-side protocol details: emitted signals, settings files, SDK wire encodings."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import pathlib

import pytest

from devhost import LocalHost
from devhost._errors import DevHostError
from devhost._settings import HostSettings, load_local_settings


async def test_signals_emitted_by_an_entity_are_queued(host: LocalHost) -> None:
    """An entity's batch output may carry signals (other SDKs emit them); they are delivered."""
    assert host.model is not None and host.entities is not None
    assert await host.entities.call("@forwarder@one", "go", {"x": 1}) == (True, None)
    exists, forwarded = await host.entities.read_state("@forwarder@one")
    assert exists
    request = json.loads(forwarded or "null")["request"]
    assert request["self"] == {"name": "forwarder", "key": "one"}
    assert request["exists"] is False and request["state"] is None
    assert request["batch"][0]["name"] == "go"
    assert json.loads(json.loads(request["batch"][0]["input"])) == {"x": 1}
    # The target is written "Counter": the extension deserialises it without the lower-casing its
    # EntityId constructor applies, so the signal reaches the instance `@Counter@target`, not the
    # `@counter@target` a client's call of the same name reaches.
    for _ in range(200):
        exists, state = await host.entities.read_state("@Counter@target")
        if exists:
            break
        await asyncio.sleep(0.02)
    assert json.loads(state or "null")["total"] == 5
    assert await host.entities.read_state("@counter@target") == (False, None)
    listed = await host.entities.list_entities("counter", fetch_state=False)
    assert [e["entityId"] for e in listed] == []  # a query by name matches the lower-cased prefix
    # What a client or an orchestration sends, the extension turns into an EntityId: lower-cased.
    assert await host.entities.call("@Counter@called", "add", 2) == (True, 2)
    assert (await host.entities.read_state("@counter@called"))[0] is True
    assert (await host.entities.read_state("@Counter@called"))[0] is False


def test_host_json(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert HostSettings.load(tmp_path) == HostSettings("api", "TestHubName")
    monkeypatch.setenv("MY_HUB", "hubfromenv")
    (tmp_path / "host.json").write_text(json.dumps(
        {"extensions": {"http": {"routePrefix": "/x/"}, "durableTask": {"hubName": "%MY_HUB%"}}}))
    assert HostSettings.load(tmp_path) == HostSettings("x", "hubfromenv")


HUB_OVERRIDE_ENV = "AzureFunctionsJobHost__extensions__durableTask__hubName"


def test_task_hub_as_the_durable_extension_resolves_it(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host_json = tmp_path / "host.json"
    monkeypatch.delenv(HUB_OVERRIDE_ENV, raising=False)
    monkeypatch.delenv("MY_HUB", raising=False)
    monkeypatch.delenv("WEBSITE_SLOT_NAME", raising=False)
    # No hubName: the app's name, made valid as the Azure Storage provider does; two apps differ.
    for site, hub in (("agents-prod", "agentsprod"), ("agents-staging", "agentsstaging"),
                      ("1st-app", "t1stapp"), ("ab", "abHub")):
        monkeypatch.setenv("WEBSITE_SITE_NAME", site)
        assert HostSettings.load(tmp_path).task_hub == hub
    # A deployment slot other than production needs a chosen name.
    monkeypatch.setenv("WEBSITE_SLOT_NAME", "staging")
    with pytest.raises(DevHostError, match="slot"):
        HostSettings.load(tmp_path)
    monkeypatch.setenv("WEBSITE_SLOT_NAME", "Production")
    assert HostSettings.load(tmp_path).task_hub == "abHub"
    monkeypatch.setenv(HUB_OVERRIDE_ENV, "StagingHub")
    monkeypatch.setenv("WEBSITE_SLOT_NAME", "staging")
    assert HostSettings.load(tmp_path).task_hub == "StagingHub"
    monkeypatch.delenv(HUB_OVERRIDE_ENV)
    monkeypatch.delenv("WEBSITE_SLOT_NAME")
    # The app setting overrides host.json, as the Functions host's configuration does.
    host_json.write_text(json.dumps({"extensions": {"durableTask": {"hubName": "FromHostJson"}}}))
    assert HostSettings.load(tmp_path).task_hub == "FromHostJson"
    monkeypatch.setenv(HUB_OVERRIDE_ENV, "FromSetting")
    assert HostSettings.load(tmp_path).task_hub == "FromSetting"
    monkeypatch.delenv(HUB_OVERRIDE_ENV)
    # A configured name the extension refuses stops the host, as the extension does not start;
    # so does a %SETTING% whose setting is missing (the name stays '%MY_HUB%').
    for bad in ("my-hub", "1hub", "ab", "a" * 51, "%MY_HUB%"):
        host_json.write_text(json.dumps({"extensions": {"durableTask": {"hubName": bad}}}))
        with pytest.raises(DevHostError, match="letters and digits only"):
            HostSettings.load(tmp_path)
    monkeypatch.setenv("MY_HUB", "hubfromenv")
    assert HostSettings.load(tmp_path).task_hub == "hubfromenv"
    # Other backends have rules of their own; the Azure Storage ones are not applied to them.
    host_json.write_text(json.dumps({"extensions": {"durableTask": {
        "hubName": "my-hub", "storageProvider": {"type": "mssql"}}}}))
    assert HostSettings.load(tmp_path).task_hub == "my-hub"


def test_max_queue_polling_interval_is_checked_as_the_extension_does(tmp_path: pathlib.Path) -> None:
    def load(value: object) -> HostSettings:
        (tmp_path / "host.json").write_text(json.dumps(
            {"extensions": {"durableTask": {"storageProvider": {"maxQueuePollingInterval": value}}}}))
        return HostSettings.load(tmp_path)

    assert load("00:00:02").max_queue_polling_interval == 2.0
    for bad in ("00:00:00", "2s", 5):
        with pytest.raises(DevHostError, match="maxQueuePollingInterval"):
            load(bad)


def test_local_settings_do_not_override_environment(tmp_path: pathlib.Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEVHOST_TEST_ALREADY", "from-env")
    monkeypatch.delenv("DEVHOST_TEST_NEW", raising=False)
    (tmp_path / "local.settings.json").write_text(json.dumps({
        "IsEncrypted": False,
        "Values": {"DEVHOST_TEST_ALREADY": "from-file", "DEVHOST_TEST_NEW": "new"},
    }))
    try:
        applied = load_local_settings(tmp_path, logging.getLogger("test"))
        assert applied == ["DEVHOST_TEST_NEW"]
        assert os.environ["DEVHOST_TEST_ALREADY"] == "from-env"
        assert os.environ["DEVHOST_TEST_NEW"] == "new"
    finally:
        os.environ.pop("DEVHOST_TEST_NEW", None)


def test_client_binding_task_hub_from_host_json(tmp_path: pathlib.Path) -> None:
    (tmp_path / "host.json").write_text(json.dumps({"extensions": {"durableTask": {"hubName": "myhub"}}}))
    host = LocalHost("basic_app", tmp_path / "d", project_dir=tmp_path, function_key="k")
    binding = json.loads(host.client_binding())
    assert binding["taskHubName"] == "myhub"
    assert "taskHub=myhub" in binding["managementUrls"]["statusQueryGetUri"]
    assert binding["managementUrls"]["id"] == "INSTANCEID"


def test_state_limit_default_and_env(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEVHOST_MAX_STATE_BYTES", raising=False)
    assert LocalHost("basic_app", tmp_path, project_dir=tmp_path).max_state_bytes == 1024 * 1024
    monkeypatch.setenv("DEVHOST_MAX_STATE_BYTES", "2048")
    assert LocalHost("basic_app", tmp_path, project_dir=tmp_path).max_state_bytes == 2048
    assert LocalHost("basic_app", tmp_path, project_dir=tmp_path, max_state_bytes=10).max_state_bytes == 10
