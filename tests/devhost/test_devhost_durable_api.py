"""The Durable HTTP API (RPC and webhook URLs) through the SDK's own client."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp
import azure.durable_functions as df
import pytest

from devhost import LocalHost


@pytest.fixture
def client(host: LocalHost) -> df.DurableOrchestrationClient:
    # The engine ships with devhost: a host without it is a failure, not a reason to skip.
    assert host.engine is not None, f"orchestration engine unavailable: {host.engine_error}"
    return df.DurableOrchestrationClient(host.client_binding())


async def _wait_status(client: df.DurableOrchestrationClient, instance_id: str, wanted: str,
                       timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        status = await client.get_status(instance_id, show_history=False)
        name = status.runtime_status.value if status.runtime_status else None
        if name == wanted:
            return status
        if time.monotonic() > deadline:
            raise AssertionError(f"{instance_id} is {name}, wanted {wanted}")
        await asyncio.sleep(0.05)


async def test_start_event_and_entity_call(host: LocalHost, client: df.DurableOrchestrationClient) -> None:
    instance_id = await client.start_new("approval_flow", None, {"key": "flow"})
    status = await _wait_status(client, instance_id, "Running")
    assert status.custom_status == "waiting"
    assert status.input_ == {"key": "flow"}
    await client.raise_event(instance_id, "approve", {"by": "ana", "amount": 5})
    done = await _wait_status(client, instance_id, "Completed")
    assert done.output == {"approved_by": "ana", "total": 5}
    statuses = await client.get_status_by(runtime_status=[df.OrchestrationRuntimeStatus.Completed])
    assert instance_id in [s.instance_id for s in statuses]
    with pytest.raises(Exception, match="is gone"):
        await client.raise_event(instance_id, "approve", {})
    purged = await client.purge_instance_history(instance_id)
    assert purged.instances_deleted == 1
    assert (await client.purge_instance_history(instance_id)).instances_deleted == 0


async def test_entity_error_reaches_orchestration(client: df.DurableOrchestrationClient) -> None:
    instance_id = await client.start_new("entity_error_flow")
    done = await _wait_status(client, instance_id, "Completed")
    assert "refused: from orchestration" in done.output["caught"]


async def test_unknown_orchestrator_and_instance(client: df.DurableOrchestrationClient) -> None:
    with pytest.raises(Exception, match="doesn't exist"):
        await client.start_new("no_such_orchestrator")
    missing = await client.get_status("no-such-instance")
    assert missing.runtime_status is None
    with pytest.raises(Exception, match="No instance with ID"):
        await client.raise_event("no-such-instance", "x", 1)
    with pytest.raises(Exception, match="No instance with ID"):
        await client.terminate("no-such-instance", "why")


async def test_terminate(client: df.DurableOrchestrationClient) -> None:
    instance_id = await client.start_new("approval_flow", "fixed-id", {"key": "t"})
    assert instance_id == "fixed-id"
    await _wait_status(client, instance_id, "Running")
    # A second start of a running instance is refused as the extension refuses it: the SDK
    # raises the backend's message (a 500 with ExceptionMessage).
    with pytest.raises(Exception, match="'fixed-id' already exists"):
        await client.start_new("approval_flow", "fixed-id", {"key": "again"})
    await client.terminate(instance_id, "not needed")
    await _wait_status(client, instance_id, "Terminated")


async def test_check_status_response_urls_work(host: LocalHost, http: aiohttp.ClientSession,
                                               client: df.DurableOrchestrationClient) -> None:
    async with http.post(f"{host.url}/api/flows/approval_flow", json={"key": "web"}) as r:
        assert r.status == 202
        payload = await r.json()
        assert r.headers["Location"] == payload["statusQueryGetUri"]
    deadline = time.monotonic() + 30
    while True:
        async with http.get(payload["statusQueryGetUri"]) as r:
            body = await r.json()
            if body["runtimeStatus"] == "Running":
                assert r.status == 202
                break
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    event_url = payload["sendEventPostUri"].replace("{eventName}", "approve")
    async with http.post(event_url, json={"by": "web", "amount": 2}) as r:
        assert r.status == 202
    await _wait_status(client, payload["id"], "Completed")
    async with http.get(payload["statusQueryGetUri"]) as r:
        assert r.status == 200
        assert (await r.json())["output"] == {"approved_by": "web", "total": 2}


async def test_rewind_is_reported_unsupported(host: LocalHost, http: aiohttp.ClientSession) -> None:
    async with http.post(f"{host.rpc_base_url}instances/x/rewind?reason=r") as r:
        assert r.status == 501
        assert r.content_type == "application/problem+json"


async def test_engine_missing_gives_501(host: LocalHost, http: aiohttp.ClientSession) -> None:
    from devhost.durable_api._api import DurableApi

    assert host.entities is not None
    api = DurableApi(entities=host.entities, engine=None, engine_error="not built",
                     management_urls=host.management_urls, check_key=lambda r: True, logger=host.log,
                     rpc_key="k")
    app = aiohttp.web.Application()
    app.add_routes(api.routes())
    runner = aiohttp.web.AppRunner(app)
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with http.post(f"http://127.0.0.1:{port}/durabletask/k/orchestrators/x", json="1") as r:
            assert r.status == 501
            assert "not built" in json.loads(await r.text())["detail"]
    finally:
        await runner.cleanup()


async def test_restart_and_suspend_resume(client: df.DurableOrchestrationClient) -> None:
    instance_id = await client.start_new("approval_flow", None, {"key": "rs"})
    await _wait_status(client, instance_id, "Running")
    await client.suspend(instance_id, "pause")
    await _wait_status(client, instance_id, "Suspended")
    await client.resume(instance_id, "go on")
    await _wait_status(client, instance_id, "Running")
    await client.raise_event(instance_id, "approve", {"by": "x", "amount": 1})
    await _wait_status(client, instance_id, "Completed")
    # The extension answers restart with the check-status payload, which the SDK returns as is.
    payload: Any = await client.restart(instance_id)
    assert isinstance(payload, dict) and set(payload) >= {"id", "statusQueryGetUri", "purgeHistoryDeleteUri"}
    new_id = payload["id"]
    assert new_id != instance_id
    restarted = await _wait_status(client, new_id, "Running")
    assert restarted.input_ == {"key": "rs"}


async def test_create_and_wait_uri(host: LocalHost, http: aiohttp.ClientSession,
                                   client: df.DurableOrchestrationClient) -> None:
    binding = json.loads(host.client_binding())
    template = binding["creationUrls"]["createAndWaitOnNewInstancePostUri"]
    url = (template.replace("{functionName}", "entity_error_flow").replace("[/{instanceId}]", "")
           .replace("{timeoutInSeconds}", "10").replace("{intervalInSeconds}", "0.05"))
    async with http.post(url) as r:
        assert r.status == 200
        assert "refused" in (await r.json())["caught"]
    url = (template.replace("{functionName}", "approval_flow").replace("[/{instanceId}]", "/waits")
           .replace("{timeoutInSeconds}", "0.2").replace("{intervalInSeconds}", "0.05"))
    async with http.post(url, json={"key": "w"}) as r:
        assert r.status == 202
        assert (await r.json())["id"] == "waits"
