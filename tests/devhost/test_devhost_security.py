"""What a caller who reaches the local host's port cannot do: reach the durable client's channel
without its key, find secrets in the log, or crash the host with odd headers."""

from __future__ import annotations

import json
import logging
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import azure.durable_functions as df
import pytest

from devhost import LocalHost

KEY = "s3cret-key"


@pytest.fixture
async def keyed(tmp_path: pathlib.Path) -> AsyncIterator[LocalHost]:
    """``basic_app`` with a function key."""
    server = LocalHost("basic_app", tmp_path / "d", project_dir=tmp_path, function_key=KEY)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def test_rpc_channel_needs_the_binding_key(keyed: LocalHost, http: aiohttp.ClientSession) -> None:
    base = keyed.url
    # Nothing of the durable API answers on the bare RPC path, with or without the function key.
    for path in ("/durabletask/entities/counter/k", "/durabletask/instances",
                 f"/durabletask/entities/counter/k?code={KEY}", "/durabletask/x/entities/counter/k"):
        async with http.get(base + path) as r:
            assert r.status == 404, path
            assert r.content_type == "application/problem+json"
    assert await _status(http, "POST", f"{base}/durabletask/entities/counter/k?op=add", json="5") == 404
    assert await _status(http, "POST", f"{base}/durabletask/orchestrators/approval_flow", json="{}") == 404
    # The webhook API takes the function key.
    assert await _status(http, "GET", f"{keyed.webhook_base_url}instances") == 401
    assert await _status(http, "GET", f"{keyed.webhook_base_url}instances?code={KEY}") == 200
    # The unmodified SDK client works through the binding the host hands to functions.
    client = df.DurableOrchestrationClient(keyed.client_binding())
    await client.signal_entity(df.EntityId("Counter", "k"), "add", 2)
    instance_id = await client.start_new("approval_flow", None, {"key": "k"})
    status = await client.get_status(instance_id)
    assert status.instance_id == instance_id
    assert f"/durabletask/{keyed.rpc_key}/" in json.loads(keyed.client_binding())["rpcBaseUrl"]
    # ... and so do the app's own functions that use the binding.
    async with http.post(f"{base}/api/counter/k/add?code={KEY}", json=1) as r:
        assert r.status in (200, 202), await r.text()


async def _status(http: aiohttp.ClientSession, method: str, url: str, **kwargs: Any) -> int:
    async with http.request(method, url, **kwargs) as r:
        return r.status


async def test_rpc_key_is_per_host(tmp_path: pathlib.Path) -> None:
    one = LocalHost("basic_app", tmp_path / "a", project_dir=tmp_path, function_key="")
    two = LocalHost("basic_app", tmp_path / "b", project_dir=tmp_path, function_key="")
    assert one.rpc_key != two.rpc_key
    assert len(one.rpc_key) >= 32


async def test_secrets_never_logged(keyed: LocalHost, http: aiohttp.ClientSession,
                                    caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="devhost")
    for url in (f"/api/secure?code={KEY}&x=1", f"/api/hello/a?%63ode={KEY}&Key=k2-value&SIG=sig-value",
                f"/runtime/webhooks/durabletask/instances?code={KEY}"):
        assert await _status(http, "GET", keyed.url + url) == 200
    client = df.DurableOrchestrationClient(keyed.client_binding())
    await client.read_entity_state(df.EntityId("Counter", "k"))  # an RPC call, logged at DEBUG
    async with http.put(f"{keyed.rpc_base_url}instances") as r:  # not served: the dispatcher logs it
        assert r.status == 404
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "/api/secure?code=REDACTED&x=1" in text
    assert "/durabletask/REDACTED/entities/Counter/k" in text
    for secret in (KEY, "k2-value", "sig-value", keyed.rpc_key):
        assert secret not in text


@pytest.mark.parametrize("raw_key", [b"\xff\xfe", "\u00e9t\u00e9".encode(), "\u00e9".encode("latin-1")])
async def test_non_ascii_function_key_is_a_401_problem(keyed: LocalHost, raw_key: bytes) -> None:
    for path in (b"/api/secure", b"/runtime/webhooks/durabletask/instances"):
        head = await _raw_request(keyed.port, b"GET " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                  b"x-functions-key: " + raw_key + b"\r\nConnection: close\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 401"), head[:200]
        assert b"application/problem+json" in head


async def _raw_request(port: int, data: bytes) -> bytes:
    import asyncio

    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    # The answer's head and problem body, without waiting for the connection to close (the host
    # may keep reading and dropping a body the client announced but never sends).
    answer = b""
    try:
        while b"}" not in answer:
            chunk = await asyncio.wait_for(reader.read(65536), 10)
            if not chunk:
                break
            answer += chunk
    except TimeoutError:
        answer += b"(no full answer within 10 s)"
    writer.close()
    return answer


def _rss_bytes() -> int:
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


async def test_body_limit_is_enforced_while_reading(tmp_path: pathlib.Path, http: aiohttp.ClientSession,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    monkeypatch.setenv("FUNCTIONS_REQUEST_BODY_SIZE_LIMIT", str(256 * 1024))
    server = LocalHost("basic_app", tmp_path / "d", project_dir=tmp_path, function_key="")
    await server.start()
    try:
        async with http.post(f"{server.url}/api/echo", data=b"x" * (256 * 1024)) as r:
            assert r.status == 201  # at the limit: served (echo answers 201)
        # Declared too large: refused before a byte of the body is read (the socket stays open).
        head = await _raw_request(server.port, b"POST /api/echo HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                  b"Content-Length: 104857600\r\nConnection: close\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 413"), head[:100]
        assert b'"body_too_large"' in head

        async def chunked_upload() -> int:
            async def chunks() -> Any:
                block = b"y" * (1024 * 1024)
                for _ in range(40):  # 40 MiB each, no Content-Length
                    yield block

            try:
                async with http.post(f"{server.url}/api/echo", data=chunks()) as r:
                    return r.status
            except aiohttp.ClientError:
                return 413  # the host answered and closed while the client was still sending

        before = _rss_bytes()
        statuses = await asyncio.wait_for(asyncio.gather(*(chunked_upload() for _ in range(8))), 60)
        grown = _rss_bytes() - before
        assert statuses == [413] * 8
        # 8 x 40 MiB were sent; the host held at most the limit per request.
        assert grown < 40 * 1024 * 1024, f"RSS grew by {grown / 2**20:.0f} MiB"
    finally:
        await server.stop()


async def _chunked(size: int, block: int = 64 * 1024) -> AsyncIterator[bytes]:
    for _ in range(size // block):
        yield b"z" * block


@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_the_body_limit_binds_every_method_of_a_streaming_function(
    tmp_path: pathlib.Path, http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    # As the Functions host: the limit is the host's, whatever the method and whether or not the
    # function reads the body (a GET handler never does).
    monkeypatch.setenv("FUNCTIONS_REQUEST_BODY_SIZE_LIMIT", str(256 * 1024))
    server = LocalHost("stream_app", tmp_path / "d", project_dir=tmp_path, function_key="")
    await server.start()
    path = "/api/peek" if method == "GET" else "/api/size"
    try:
        try:
            async with http.request(method, server.url + path, data=_chunked(50 * 1024 * 1024)) as r:
                status, body = r.status, await r.text()
        except aiohttp.ClientError as exc:  # the host answered and closed while the client was sending
            status, body = 413, repr(exc)
        assert status == 413, body
        # Under the limit, the body still reaches the function, chunked or declared.
        async with http.post(server.url + "/api/size", data=_chunked(256 * 1024)) as r:
            assert (r.status, await r.text()) == (200, str(256 * 1024))
        async with http.post(server.url + "/api/size", data=b"x" * 1000) as r:
            assert (r.status, await r.text()) == (200, "1000")
        async with http.get(server.url + "/api/peek", data=b"x" * 1000) as r:
            assert (r.status, await r.text()) == (200, "peeked")
    finally:
        await server.stop()
