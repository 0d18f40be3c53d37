"""Entities through the real entity function, the JSON batch protocol and the SDK's client."""

from __future__ import annotations

import asyncio
import json
import pathlib
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import azure.durable_functions as df
import pytest

from devhost import DevHostError, EntityIdError, LocalHost, make_entity_id, parse_entity_id


async def _wait_state(host: LocalHost, entity_id: str, predicate: Any, timeout: float = 30) -> Any:
    assert host.entities is not None
    deadline = time.monotonic() + timeout
    while True:
        exists, text = await host.entities.read_state(entity_id)
        state = json.loads(text) if exists and text is not None else None
        if predicate(state):
            return state
        if time.monotonic() > deadline:
            raise AssertionError(f"state of {entity_id} never matched; last: {state!r}")
        await asyncio.sleep(0.02)


def test_entity_ids() -> None:
    assert parse_entity_id("@counter@a@b") == ("counter", "a@b")
    assert make_entity_id("Counter", "k") == "@counter@k"
    assert str(df.EntityId("Counter", "k")) == make_entity_id("Counter", "k")
    for bad in ("counter@k", "@counter", "@@k", "@counter@"):
        with pytest.raises(EntityIdError):
            parse_entity_id(bad)


async def test_signal_and_read_through_sdk_client(host: LocalHost, http: aiohttp.ClientSession) -> None:
    async with http.get(f"{host.url}/api/counter/k1") as r:
        assert r.status == 404
        assert await r.json() == {"exists": False}
    for value in (5, 7):
        async with http.post(f"{host.url}/api/counter/k1/add", data=json.dumps(value)) as r:
            assert r.status == 202
    await _wait_state(host, "@counter@k1", lambda s: s is not None and s["total"] == 12)
    async with http.get(f"{host.url}/api/counter/k1") as r:
        assert r.status == 200
        assert await r.json() == {"exists": True, "state": {"total": 12, "log": [5, 7]}}


async def test_sdk_client_directly(host: LocalHost) -> None:
    client = df.DurableOrchestrationClient(host.client_binding())
    entity = df.EntityId("Counter", "direct")
    await client.signal_entity(entity, "append", {"nested": ["x", 1]})
    await client.signal_entity(entity, "append", "plain string")
    await _wait_state(host, "@counter@direct", lambda s: s is not None and len(s["log"]) == 2)
    state = await client.read_entity_state(entity)
    assert state.entity_exists
    assert state.entity_state["log"] == [{"nested": ["x", 1]}, "plain string"]
    missing = await client.read_entity_state(df.EntityId("Counter", "nobody"))
    assert not missing.entity_exists


async def test_client_binding_shape(host: LocalHost) -> None:
    binding = json.loads(host.client_binding())
    for field in ("taskHubName", "connectionName", "creationUrls", "managementUrls", "baseUrl",
                  "requiredQueryStringParameters", "rpcBaseUrl", "httpBaseUrl"):
        assert field in binding
    assert binding["rpcBaseUrl"] == f"{host.url}/durabletask/{host.rpc_key}/"
    client = df.DurableOrchestrationClient(host.client_binding())
    payload = client.create_http_management_payload("inst-1")
    assert payload["id"] == "inst-1"
    status_url = payload["statusQueryGetUri"]
    assert status_url.startswith(f"{host.url}/runtime/webhooks/durabletask/instances/inst-1?")


async def test_gateway_call_returns_results_and_errors(host: LocalHost) -> None:
    gateway = host.entities
    assert gateway is not None
    assert await gateway.call("@counter@c", "add", 3) == (True, 3)
    assert await gateway.call("@counter@c", "add", 4) == (True, 7)
    ok, error = await gateway.call("@counter@c", "fail", "nope")
    assert (ok, error) == (False, "refused: nope")
    # A failed operation leaves the state as it was.
    ok, state = await gateway.call("@counter@c", "get", None)
    assert ok and state == {"total": 7, "log": [3, 4]}
    ok, error = await gateway.call("@nosuchentity@c", "add", 1)
    assert not ok and "no entity function" in error


async def test_a_batch_the_entity_function_fails_is_aborted_and_retried(
    host: LocalHost, tmp_path: pathlib.Path
) -> None:
    # As the Durable extension does (TaskEntityShim.ExecuteOutOfProcBatch -> SessionAbortedException):
    # a failed invocation commits nothing, not even the operations before the failing one, and the
    # batch runs again later; its operations are neither lost nor answered as errors.
    gateway = host.entities
    assert gateway is not None
    marker = tmp_path / "failed-once"
    await gateway.signal("@counter@abort", "add", 1)
    started = time.monotonic()
    ok, total = await gateway.call("@counter@abort", "sdk_fails_once", {"marker": str(marker), "amount": 2})
    assert marker.exists() and time.monotonic() - started >= 0.9  # failed once, retried after 1 s
    assert (ok, total) == (True, 3)
    assert await gateway.call("@counter@abort", "get", None) == (True, {"total": 3, "log": [1, 2]})


async def test_request_id_makes_call_idempotent(host: LocalHost) -> None:
    gateway = host.entities
    assert gateway is not None
    first = await gateway.call("@counter@idem", "add", 2, request_id="r-1")
    again = await gateway.call("@counter@idem", "add", 2, request_id="r-1")
    assert first == again == (True, 2)
    assert await gateway.call("@counter@idem", "get", None) == (True, {"total": 2, "log": [2]})


async def test_signals_to_one_entity_apply_in_order(host: LocalHost, http: aiohttp.ClientSession) -> None:
    senders, per_sender = 10, 20
    client = df.DurableOrchestrationClient(host.client_binding())
    entity = df.EntityId("Counter", "ordered")

    async def send(sender: int) -> None:
        for i in range(per_sender):  # each sender's signals are sequential: their order is defined
            await client.signal_entity(entity, "append", [sender, i])

    await asyncio.gather(*(send(s) for s in range(senders)))
    state = await _wait_state(host, "@counter@ordered",
                              lambda s: s is not None and len(s["log"]) >= senders * per_sender)
    log = [tuple(item) for item in state["log"]]
    assert len(log) == senders * per_sender
    assert len(set(log)) == len(log)  # nothing duplicated
    for sender in range(senders):
        assert [i for s, i in log if s == sender] == list(range(per_sender))


async def test_queued_operations_run_in_batches(tmp_path: pathlib.Path) -> None:
    server = LocalHost("basic_app", tmp_path / "d", project_dir=tmp_path, function_key="", max_batch=8)
    await server.start()
    try:
        gateway = server.entities
        assert gateway is not None
        await gateway.signal("@counter@b", "slow_append", {"sleep": 0.3, "item": "first"})
        await asyncio.sleep(0.1)  # the first batch is running; the next ones queue up
        for i in range(20):
            await gateway.signal("@counter@b", "append", i)
        state = await _wait_state(server, "@counter@b", lambda s: s is not None and len(s["log"]) == 21)
        assert state["log"] == ["first", *range(20)]
    finally:
        await server.stop()


def _host_json(project: pathlib.Path, document: dict[str, Any]) -> None:
    (project / "host.json").write_text(json.dumps(document))


async def _batch_sizes(server: LocalHost, queued: int) -> list[int]:
    """Hold the `batches` entity with one slow operation, queue `queued` more behind it, and
    answer the size of every batch the entity function was given."""
    gateway = server.entities
    assert gateway is not None
    await gateway.signal("@batches@b", "hold", 0)
    await _wait_state(server, "@batches@b", lambda s: s is not None)  # the first batch ran
    await gateway.signal("@batches@b", "hold", 1.5)
    await asyncio.sleep(0.2)  # that batch is running; the next operations queue up behind it
    for _ in range(queued):
        await gateway.signal("@batches@b", "tick", None)
    state = await _wait_state(server, "@batches@b", lambda s: s is not None and sum(s["sizes"]) == queued + 2)
    sizes: list[int] = state["sizes"][2:]
    return sizes


async def test_batches_hold_at_most_host_json_max_entity_operation_batch_size(tmp_path: pathlib.Path) -> None:
    """As the Durable extension: no batch holds more than host.json's maxEntityOperationBatchSize."""
    durable = {"maxEntityOperationBatchSize": 3}
    _host_json(tmp_path, {"version": "2.0", "extensions": {"durableTask": durable}})
    server = LocalHost("basic_app", tmp_path / "d", project_dir=tmp_path, function_key="")
    assert server.max_batch == 3
    await server.start()
    try:
        assert await _batch_sizes(server, 10) == [3, 3, 3, 1]
    finally:
        await server.stop()
    # --max-batch (LocalHost's max_batch) still chooses over host.json.
    assert LocalHost("basic_app", tmp_path / "e", project_dir=tmp_path, max_batch=7).max_batch == 7


def test_without_host_json_batches_hold_the_consumption_plan_default(tmp_path: pathlib.Path) -> None:
    """The extension's default when host.json sets none: 50 on a consumption plan (Flex too)."""
    assert LocalHost("basic_app", tmp_path / "d", project_dir=tmp_path).max_batch == 50


@pytest.mark.parametrize("value", [0, -1, "3", 2.5, True])
def test_a_max_entity_operation_batch_size_that_is_not_a_positive_integer_stops_the_host(
    tmp_path: pathlib.Path, value: Any
) -> None:
    durable = {"maxEntityOperationBatchSize": value}
    _host_json(tmp_path, {"version": "2.0", "extensions": {"durableTask": durable}})
    with pytest.raises(DevHostError, match="maxEntityOperationBatchSize must be a positive integer"):
        LocalHost("basic_app", tmp_path / "d", project_dir=tmp_path)


def test_the_function_timeout_app_setting_overrides_host_json(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the Functions host: AzureFunctionsJobHost__functionTimeout overrides host.json's value."""
    from devhost._settings import HostSettings

    assert HostSettings.load(tmp_path).function_timeout == 1800  # Flex Consumption's default
    _host_json(tmp_path, {"version": "2.0", "functionTimeout": "00:10:00"})
    assert HostSettings.load(tmp_path).function_timeout == 600
    monkeypatch.setenv("AzureFunctionsJobHost__functionTimeout", "00:00:03")
    assert HostSettings.load(tmp_path).function_timeout == 3
    (tmp_path / "host.json").unlink()
    assert HostSettings.load(tmp_path).function_timeout == 3


def test_app_settings_override_host_json_durable_numbers(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the Functions host: AzureFunctionsJobHost__extensions__durableTask__<name> overrides
    host.json's value (names matched case-insensitively), with or without a host.json."""
    from devhost._settings import HostSettings

    durable = {"maxConcurrentOrchestratorFunctions": 256, "maxEntityOperationBatchSize": 3}
    _host_json(tmp_path, {"version": "2.0", "extensions": {"durableTask": durable}})
    settings = HostSettings.load(tmp_path)
    assert (settings.entity_batches_at_once, settings.max_entity_operation_batch_size) == (256, 3)
    orchestrators = "AzureFunctionsJobHost__extensions__durableTask__maxConcurrentOrchestratorFunctions"
    monkeypatch.setenv(orchestrators, "20")
    monkeypatch.setenv("AZUREFUNCTIONSJOBHOST__EXTENSIONS__DURABLETASK__MAXENTITYOPERATIONBATCHSIZE", "7")
    settings = HostSettings.load(tmp_path)
    assert (settings.entity_batches_at_once, settings.max_entity_operation_batch_size) == (20, 7)
    (tmp_path / "host.json").unlink()
    assert HostSettings.load(tmp_path).entity_batches_at_once == 20
    monkeypatch.setenv(orchestrators, "0")
    with pytest.raises(DevHostError, match="maxConcurrentOrchestratorFunctions: must be a positive integer"):
        HostSettings.load(tmp_path)


async def test_many_entities_in_parallel(host: LocalHost) -> None:
    gateway = host.entities
    assert gateway is not None
    results = await asyncio.gather(*(gateway.call(f"@counter@p{i}", "add", i) for i in range(100)))
    assert results == [(True, i) for i in range(100)]
    listed = await gateway.list_entities("counter", fetch_state=True)
    assert {item["entityId"]["key"] for item in listed} >= {f"p{i}" for i in range(100)}


async def test_entity_list_endpoint(host: LocalHost, http: aiohttp.ClientSession) -> None:
    assert host.entities is not None
    await host.entities.call("@counter@l1", "add", 1)
    async with http.get(f"{host.rpc_base_url}entities/counter?fetchState=true") as r:
        assert r.status == 200
        items = await r.json()
    assert items[0]["entityId"] == {"name": "counter", "key": "l1"}
    assert items[0]["state"] == {"total": 1, "log": [1]}


async def test_delete_removes_entity(host: LocalHost) -> None:
    gateway = host.entities
    assert gateway is not None
    await gateway.call("@counter@del", "add", 1)
    assert (await gateway.read_state("@counter@del"))[0]
    assert await gateway.call("@counter@del", "delete", None) == (True, None)
    assert await gateway.read_state("@counter@del") == (False, None)


async def test_state_size_limit(tmp_path: pathlib.Path) -> None:
    server = LocalHost("basic_app", tmp_path / "d", project_dir=tmp_path, function_key="",
                       max_state_bytes=10_000)
    await server.start()
    try:
        gateway = server.entities
        assert gateway is not None
        assert await gateway.call("@counter@big", "grow", 100) == (True, 0)
        before = await gateway.read_state("@counter@big")
        ok, error = await gateway.call("@counter@big", "grow", 20_000)
        assert not ok
        assert "entity state too large" in error and "10000" in error
        assert await gateway.read_state("@counter@big") == before
        # Queued together with a good operation: only the oversized one fails.
        await gateway.signal("@counter@big", "slow_append", {"sleep": 0.2, "item": "a"})
        await asyncio.sleep(0.05)
        calls = [gateway.call("@counter@big", "grow", 20_000), gateway.call("@counter@big", "append", "b")]
        big, small = await asyncio.gather(*calls)
        assert not big[0] and small == (True, 0)
        state = await _wait_state(server, "@counter@big", lambda s: s is not None and "b" in s["log"])
        assert state["log"] == ["a", "b"] and len(state["blob"]) == 100
    finally:
        await server.stop()


async def test_scheduled_signal(host: LocalHost) -> None:
    gateway = host.entities
    assert gateway is not None
    when = datetime.now(UTC) + timedelta(seconds=1)
    await gateway.signal("@counter@later", "add", 1, scheduled_time=when)
    assert await gateway.read_state("@counter@later") == (False, None)
    await _wait_state(host, "@counter@later", lambda s: s is not None and s["total"] == 1)
    assert datetime.now(UTC) >= when


async def test_signal_endpoint_errors(host: LocalHost, http: aiohttp.ClientSession) -> None:
    async with http.post(f"{host.rpc_base_url}entities/counter/k") as r:
        assert r.status == 400
        assert (await r.json())["code"] == "missing_operation"
    async with http.post(f"{host.rpc_base_url}entities/nosuch/k?op=add", json="1") as r:
        assert r.status == 400  # as the extension: the function does not exist (ArgumentException)
        assert "doesn't exist" in (await r.json())["ExceptionMessage"]
    async with http.post(f"{host.rpc_base_url}entities/counter/k?op=add", data="{not json",
                         headers={"Content-Type": "application/json"}) as r:
        assert r.status == 400
    assert await host.entities.read_state("@counter@k") == (False, None)  # type: ignore[union-attr]


async def test_pending_signals_survive_restart(tmp_path: pathlib.Path) -> None:
    server = LocalHost("basic_app", tmp_path / "d", project_dir=tmp_path, function_key="")
    await server.start()
    gateway = server.entities
    assert gateway is not None
    await gateway.signal("@counter@r", "add", 1)
    await _wait_state(server, "@counter@r", lambda s: s is not None)
    when = datetime.now(UTC) + timedelta(seconds=0.5)
    await gateway.signal("@counter@r", "add", 10, scheduled_time=when)
    await server.stop()  # the scheduled signal is committed but not yet run

    again = LocalHost("basic_app", tmp_path / "d", project_dir=tmp_path, function_key="")
    await again.start()
    try:
        state = await _wait_state(again, "@counter@r", lambda s: s is not None and s["total"] == 11)
        assert state["log"] == [1, 10]
    finally:
        await again.stop()


def test_run_in_thread(tmp_path: pathlib.Path) -> None:
    with LocalHost.run_in_thread("basic_app", tmp_path / "d", project_dir=tmp_path,
                                 function_key="") as server:
        assert server.entities is not None
        assert server.submit(server.entities.call("@counter@t", "add", 5)) == (True, 5)

        async def fetch() -> tuple[int, str]:
            async with aiohttp.ClientSession() as s, s.get(f"{server.url}/api/hello/thread") as r:
                return r.status, await r.text()

        assert asyncio.run(fetch()) == (200, "hello thread")


async def test_entity_query_pages_with_continuation_tokens(
    host: LocalHost, http: aiohttp.ClientSession
) -> None:
    # As the extension: `top` is the page size; the next page's token comes back in the
    # x-ms-continuation-token header and goes in the same request header; the last page has none.
    assert host.entities is not None
    await asyncio.gather(*(host.entities.call(f"@counter@q{i}", "add", i) for i in range(7)))
    await host.entities.call("@other@q0", "add", 1)
    keys: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        headers = {"x-ms-continuation-token": token} if token else {}
        async with http.get(f"{host.rpc_base_url}entities/counter?top=3", headers=headers) as r:
            assert r.status == 200
            page = await r.json()
            token = r.headers.get("x-ms-continuation-token")
        assert len(page) <= 3 and all("state" not in item for item in page)
        keys += [item["entityId"]["key"] for item in page]
        pages += 1
        if not token:
            break
    assert keys == sorted(f"q{i}" for i in range(7)) and pages == 3
    for bad in ({"top": "0"}, {"top": "many"}):
        async with http.get(f"{host.rpc_base_url}entities/counter", params=bad) as r:
            assert r.status == 400
    async with http.get(f"{host.rpc_base_url}entities/counter",
                        headers={"x-ms-continuation-token": "not-ours"}) as r:
        assert r.status == 400


async def test_the_entity_query_bounds_the_last_operation_time(
    host: LocalHost, http: aiohttp.ClientSession
) -> None:
    # lastOperationTimeFrom / lastOperationTimeTo, as the extension's query takes them (inclusive).
    assert host.entities is not None
    await host.entities.call("@counter@t-old", "add", 1)
    await asyncio.sleep(0.05)
    between = datetime.now(UTC)
    await asyncio.sleep(0.05)
    await host.entities.call("@counter@t-new", "add", 1)

    async def keys(**bounds: str) -> list[str]:
        async with http.get(f"{host.rpc_base_url}entities/counter", params=bounds) as r:
            assert r.status == 200, await r.text()
            found = [item["entityId"]["key"] for item in await r.json()]
        return [key for key in found if key.startswith("t-")]

    assert await keys() == ["t-new", "t-old"]
    assert await keys(lastOperationTimeTo=between.isoformat()) == ["t-old"]
    assert await keys(lastOperationTimeFrom=between.isoformat()) == ["t-new"]
    naive_utc = between.replace(tzinfo=None).isoformat()  # no zone: UTC
    assert await keys(lastOperationTimeTo=naive_utc) == ["t-old"]
    async with http.get(f"{host.rpc_base_url}entities/counter", params={"lastOperationTimeTo": "soon"}) as r:
        assert r.status == 400


async def test_a_batch_past_function_timeout_fails_every_operation_and_restarts_the_worker(
    tmp_path: pathlib.Path,
) -> None:
    """As in Azure: past host.json's functionTimeout the host restarts the worker process, and the
    Durable extension commits the batch as every operation failed, the state unchanged, without
    running it again."""
    (tmp_path / "host.json").write_text(json.dumps({"version": "2.0", "functionTimeout": "00:00:02"}))
    server = LocalHost("basic_app", tmp_path / "d", project_dir=tmp_path, function_key="")
    await server.start()
    try:
        gateway, workers = server.entities, server.workers
        assert gateway is not None and workers is not None
        assert (await gateway.call("@counter@t", "append", "kept"))[0]
        before = await gateway.read_state("@counter@t")
        marker = tmp_path / "started.txt"
        ok, error = await gateway.call(
            "@counter@t", "slow_append", {"sleep": 30, "item": "never", "marker": str(marker)}
        )
        assert not ok and "functionTimeout" in str(error)
        assert await gateway.read_state("@counter@t") == before  # nothing of the batch was stored
        assert marker.read_text() == "started\n"  # it ran once and was not run again
        # The host restarts the worker; the next operation runs on the new one.
        assert (await gateway.call("@counter@t", "append", "after"))[0]
        assert workers.restarts == 1
        exists, text = await gateway.read_state("@counter@t")
        assert exists and json.loads(text or "null")["log"] == ["kept", "after"]
    finally:
        await server.stop()


async def test_an_operation_that_changes_nothing_still_counts_as_activity(host: LocalHost) -> None:
    """The entity query's lastOperationTime moves with every operation, as the extension's does:
    idle expiry reads it, so a session only read from is not idle."""
    gateway = host.entities
    assert gateway is not None
    assert (await gateway.call("@counter@active", "add", 1))[0]
    [first] = (await gateway.list_entities("counter", fetch_state=True, after=("counter", "acti")))[:1]
    assert first["entityId"]["key"] == "active"
    await asyncio.sleep(0.05)
    # "fail" raises inside the entity: the operation fails and the state is left as it was.
    assert not (await gateway.call("@counter@active", "fail", "x"))[0]
    [second] = (await gateway.list_entities("counter", fetch_state=True, after=("counter", "acti")))[:1]
    assert second["state"] == first["state"]
    assert second["lastOperationTime"] > first["lastOperationTime"]


@pytest.mark.parametrize(("provider", "cap"), [("AzureStorage", 2), ("azureManaged", 4)])
async def test_the_backend_decides_which_setting_caps_entity_batches(
    tmp_path: pathlib.Path, provider: str, cap: int
) -> None:
    """On Azure Storage an out-of-process entity batch is an orchestration work item, so
    maxConcurrentOrchestratorFunctions caps them; on the Durable Task Scheduler,
    maxConcurrentEntityFunctions does."""
    durable = {"storageProvider": {"type": provider}, "maxConcurrentOrchestratorFunctions": 2,
               "maxConcurrentEntityFunctions": 4}
    host_json = {"version": "2.0", "extensions": {"durableTask": durable}}
    (tmp_path / "host.json").write_text(json.dumps(host_json))
    server = LocalHost("basic_app", tmp_path / "d", project_dir=tmp_path, function_key="")
    await server.start()
    try:
        gateway = server.entities
        assert gateway is not None and server.entity_concurrency == cap
        marker = tmp_path / "started.txt"
        calls = [
            gateway.call(f"@counter@cap{i}", "slow_append", {"sleep": 1.5, "item": i, "marker": str(marker)})
            for i in range(6)
        ]
        running = asyncio.gather(*calls)
        await asyncio.sleep(1.0)  # the first batches are sleeping; the rest wait for a slot
        assert marker.read_text().count("started") == cap
        assert all(ok for ok, _ in await running)
    finally:
        await server.stop()


async def test_a_batch_reads_the_queue_in_one_trip_to_the_database_thread(
    host: LocalHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before a batch, its entity's worker reads the state and the due messages together, and
    once the queue is drained the next due time with them: each trip to the database thread is
    two thread wakeups on the path from a signal to its batch."""
    from devhost.entities._store import EntityStore

    gateway = host.entities
    assert gateway is not None
    trips: list[str] = []
    run = EntityStore.run

    async def counted(self: EntityStore, fn: Any, *args: Any) -> Any:
        trips.append(getattr(fn, "func", fn).__name__)
        return await run(self, fn, *args)

    monkeypatch.setattr(EntityStore, "run", counted)
    await gateway.signal("@counter@trips", "add", 1)
    deadline = time.monotonic() + 30
    while trips.count("next_batch") + trips.count("fetch_due") < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.2)  # a trip after the drained read would show here
    assert trips == ["enqueue", "next_batch", "commit_turn", "next_batch"]
    monkeypatch.undo()
    assert await gateway.read_state("@counter@trips") == (True, json.dumps({"total": 1, "log": [1]}))
