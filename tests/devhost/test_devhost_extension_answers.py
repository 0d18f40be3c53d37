"""The local host answers the Durable HTTP API as the extension's HttpApiHandler does (status codes,
headers, timestamps, paging, entity signals), checked through the SDK's client and the webhooks."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import aiohttp
import azure.durable_functions as df
import pytest

from devhost import LocalHost

SECONDS_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@pytest.fixture
def client(host: LocalHost) -> df.DurableOrchestrationClient:
    assert host.engine is not None, host.engine_error
    return df.DurableOrchestrationClient(host.client_binding())


async def _until(client: df.DurableOrchestrationClient, instance_id: str, wanted: str) -> Any:
    deadline = time.monotonic() + 30
    while True:
        status = await client.get_status(instance_id)
        if status.runtime_status is not None and status.runtime_status.value == wanted:
            return status
        assert time.monotonic() < deadline, f"{instance_id} never became {wanted}"
        await asyncio.sleep(0.05)


async def test_failed_instance_status_is_200_unless_asked(host: LocalHost, http: aiohttp.ClientSession,
                                                         client: df.DurableOrchestrationClient) -> None:
    instance_id = await client.start_new("failing_flow")
    failed = await _until(client, instance_id, "Failed")  # the SDK reads the 200 status body
    assert "boom" in str(failed.output)
    status_url = host.management_urls(instance_id)["statusQueryGetUri"]
    async with http.get(status_url) as r:
        assert r.status == 200
        body = await r.json()
        assert body["runtimeStatus"] == "Failed"
        assert SECONDS_Z.match(body["createdTime"]) and SECONDS_Z.match(body["lastUpdatedTime"])
    async with http.get(status_url + "&returnInternalServerErrorOnFailure=true") as r:
        assert r.status == 500
        assert (await r.json())["runtimeStatus"] == "Failed"


async def test_create_and_wait_on_a_failing_instance(host: LocalHost, http: aiohttp.ClientSession) -> None:
    url = f"{host.webhook_base_url}orchestrators/failing_flow?timeout=30&pollingInterval=0.05"
    async with http.post(url) as r:
        assert r.status == 200
        assert (await r.json())["runtimeStatus"] == "Failed"


async def test_running_status_and_check_status_headers(host: LocalHost, http: aiohttp.ClientSession,
                                                       client: df.DurableOrchestrationClient) -> None:
    async with http.post(f"{host.webhook_base_url}orchestrators/approval_flow", json={"key": "h"}) as r:
        assert r.status == 202
        assert r.headers["Retry-After"] == "10"
        payload = await r.json()
        assert r.headers["Location"] == payload["statusQueryGetUri"]
        assert "rewindPostUri" not in payload
    await _until(client, payload["id"], "Running")
    async with http.get(payload["statusQueryGetUri"]) as r:
        assert r.status == 202
        assert r.headers["Retry-After"] == "5"
        assert r.headers["Location"] == payload["statusQueryGetUri"]


async def test_purge_of_a_running_instance_is_refused(client: df.DurableOrchestrationClient) -> None:
    instance_id = await client.start_new("approval_flow", None, {"key": "p"})
    await _until(client, instance_id, "Running")
    with pytest.raises(Exception, match="412"):
        await client.purge_instance_history(instance_id)
    assert (await client.get_status(instance_id)).runtime_status is not None  # still there
    await client.terminate(instance_id, "done")
    await _until(client, instance_id, "Terminated")
    assert (await client.purge_instance_history(instance_id)).instances_deleted == 1


async def test_instances_page_with_continuation_token(host: LocalHost, http: aiohttp.ClientSession,
                                                      client: df.DurableOrchestrationClient) -> None:
    started = {await client.start_new("approval_flow", None, {"key": f"q{i}"}) for i in range(5)}
    seen: list[str] = []
    token = ""
    for _ in range(10):
        headers = {"x-ms-continuation-token": token} if token else {}
        async with http.get(f"{host.webhook_base_url}instances?top=2", headers=headers) as r:
            assert r.status == 200
            page = await r.json()
            assert len(page) <= 2
            seen += [item["instanceId"] for item in page]
            token = r.headers["x-ms-continuation-token"]
        if not token:
            break
    assert set(seen) == started and len(seen) == len(started)


async def test_entity_delete_text_body_and_unknown_name(host: LocalHost, http: aiohttp.ClientSession,
                                                        client: df.DurableOrchestrationClient) -> None:
    base = f"{host.webhook_base_url}entities/Counter/t"
    async with http.post(f"{base}?op=append", data="plain words",
                         headers={"Content-Type": "text/plain"}) as r:
        assert r.status == 202
    deadline = time.monotonic() + 30
    while (state := await client.read_entity_state(df.EntityId("Counter", "t"))).entity_state is None:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    assert state.entity_state["log"] == ["plain words"]  # a text body is the input as a string
    async with http.delete(base) as r:  # DELETE signals the entity's "delete" operation
        assert r.status == 202
    while (await client.read_entity_state(df.EntityId("Counter", "t"))).entity_exists:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    async with http.post(f"{host.webhook_base_url}entities/NoSuchEntity/k?op=x", json=1) as r:
        assert r.status == 400
    with pytest.raises(Exception, match="400"):  # the SDK reports the 400 by its status
        await client.signal_entity(df.EntityId("NoSuchEntity", "k"), "x", 1)


async def test_instance_query_pages_by_100_in_instance_id_order(
    host: LocalHost, http: aiohttp.ClientSession, client: df.DurableOrchestrationClient
) -> None:
    # Started in the reverse of their id order: the backend answers by instance id (the Azure
    # Storage Instances table's partition key), not by creation.
    ids = [f"q-{n:03d}" for n in range(104)]
    for instance_id in reversed(ids):
        await client.start_new("approval_flow", instance_id, {"key": instance_id})
    # Without `top` the page is 100 (OrchestrationStatusQueryCondition.PageSize); the SDK's
    # get_status_all reads that first page and drops the continuation token.
    assert [s.instance_id for s in await client.get_status_all()] == ids[:100]
    async with http.get(f"{host.webhook_base_url}instances?instanceIdPrefix=q-") as r:
        answered = await r.json()
        first = [item["instanceId"] for item in answered]
        first_inputs = all(item["input"] == {"key": item["instanceId"]} for item in answered)
        token = r.headers["x-ms-continuation-token"]
    assert first == ids[:100] and token
    async with http.get(f"{host.webhook_base_url}instances?instanceIdPrefix=q-&showInput=false",
                        headers={"x-ms-continuation-token": token}) as r:
        rest = await r.json()
        assert [item["instanceId"] for item in rest] == ids[100:]
        assert r.headers["x-ms-continuation-token"] == ""
        assert all(item["input"] is None for item in rest) and first_inputs
    async with http.get(f"{host.webhook_base_url}instances",
                        headers={"x-ms-continuation-token": "not-ours"}) as r:
        assert r.status == 400
