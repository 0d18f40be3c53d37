"""Orchestrations through the whole local host: HTTP trigger → durable client RPC → engine,
entity calls through the host's SQLite entity queue, and a restart of the host."""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from devhost import LocalHost


def make_host(data: pathlib.Path, project: pathlib.Path) -> LocalHost:
    return LocalHost("orch_app", data, port=0, function_key="", project_dir=project)


@pytest.fixture
async def orch_host(tmp_path: pathlib.Path) -> AsyncIterator[LocalHost]:
    server = make_host(tmp_path / "data", tmp_path)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def start(http: aiohttp.ClientSession, host: LocalHost, name: str, body: Any) -> dict[str, Any]:
    async with http.post(f"{host.url}/api/orchestrators/{name}", json=body) as resp:
        assert resp.status == 202, await resp.text()
        urls: dict[str, Any] = await resp.json()
        return urls


async def status_of(http: aiohttp.ClientSession, host: LocalHost, iid: str) -> dict[str, Any]:
    async with http.get(f"{host.url}/api/instances/{iid}") as resp:
        assert resp.status == 200, await resp.text()
        body: dict[str, Any] = await resp.json()
        return body


async def wait_status(
    http: aiohttp.ClientSession, host: LocalHost, iid: str, wanted: tuple[str, ...], timeout: float = 30
) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        status = await status_of(http, host, iid)
        if status["runtimeStatus"] in wanted:
            return status
        assert asyncio.get_running_loop().time() < deadline, status
        await asyncio.sleep(0.02)


async def test_entity_orchestration_over_http(orch_host: LocalHost, http: aiohttp.ClientSession) -> None:
    urls = await start(http, orch_host, "entity_user", "http-1")
    iid = urls["id"]
    # The management URL the SDK built points at the local host and answers like the extension.
    deadline = asyncio.get_running_loop().time() + 10
    while True:
        async with http.get(urls["statusQueryGetUri"]) as resp:
            if resp.status == 200:
                payload = await resp.json()
                break
            assert resp.status == 202
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.02)
    assert payload["runtimeStatus"] == "Completed"
    assert payload["output"] == {"first": 5, "total": 6, "error": payload["output"]["error"], "both": [16, 8]}
    assert "counter exploded" in payload["output"]["error"]
    status = await status_of(http, orch_host, iid)
    assert status["runtimeStatus"] == "Completed"
    assert any(e["EventType"] == "EventSent" for e in status["history"])
    async with http.get(f"{orch_host.url}/api/entities/Counter/http-1") as resp:
        assert await resp.json() == {"exists": True, "state": 16}


async def test_an_activity_gets_its_durable_client_binding(
    orch_host: LocalHost, http: aiohttp.ClientSession
) -> None:
    urls = await start(http, orch_host, "client_activity", "ca-1")
    status = await wait_status(http, orch_host, urls["id"], ("Completed", "Failed"))
    assert status["runtimeStatus"] == "Completed", status
    assert status["output"] == {"signalled": "ca-1"}
    # The signal the activity sent through its client reached the entity.
    deadline = asyncio.get_running_loop().time() + 10
    while True:
        async with http.get(f"{orch_host.url}/api/entities/Counter/ca-1") as resp:
            body = await resp.json()
        if body.get("exists"):
            break
        assert asyncio.get_running_loop().time() < deadline, body
        await asyncio.sleep(0.02)
    assert body == {"exists": True, "state": 5}


async def test_human_approval_survives_a_host_restart(
    tmp_path: pathlib.Path, http: aiohttp.ClientSession
) -> None:
    first = make_host(tmp_path / "data", tmp_path)
    await first.start()
    try:
        iid = (await start(http, first, "approval", {"timeout": 60}))["id"]
        waiting = await wait_status(http, first, iid, ("Running",))
        assert waiting["customStatus"] == {"stage": "waiting"}
    finally:
        await first.stop()

    second = make_host(tmp_path / "data", tmp_path)
    await second.start()
    try:
        async with http.post(f"{second.url}/api/instances/{iid}/events/approval", json={"by": "bob"}) as resp:
            assert resp.status == 202, await resp.text()
        done = await wait_status(http, second, iid, ("Completed", "Failed"))
        assert done["output"] == {"approved": {"by": "bob"}}
        assert done["customStatus"] == {"stage": "approved"}
    finally:
        await second.stop()


async def test_unknown_orchestrator_is_a_client_error(
    orch_host: LocalHost, http: aiohttp.ClientSession
) -> None:
    async with http.post(f"{orch_host.url}/api/orchestrators/nope", json=None) as resp:
        # The SDK client raises on the host's 400; the function's failure surfaces as a 500.
        assert resp.status >= 400
    async with http.get(f"{orch_host.url}/api/instances/not-there") as resp:
        assert resp.status == 404


async def test_the_host_indexes_the_app_once(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import orch_app

    calls: list[int] = []
    original = orch_app.app.get_functions

    def counting() -> Any:
        calls.append(1)
        return original()

    monkeypatch.setattr(orch_app.app, "get_functions", counting)
    host = LocalHost(orch_app, tmp_path / "data", port=0, function_key="", project_dir=tmp_path)
    await host.start()
    try:
        assert host.engine is not None and host.engine_error is None
        assert len(calls) == 1
    finally:
        await host.stop()
