"""The local host's MCP extension emulation, driven by the official MCP client over real sockets."""

from __future__ import annotations

import asyncio
import contextlib
import json
import pathlib
import time
from collections.abc import AsyncIterator

import aiohttp
import httpx2
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from devhost import LocalHost
from devhost.mcp import MCP_PREFIX, input_schema, to_call_result

KEY = "mcp-test-key"


@pytest.fixture
async def mcp_host(tmp_path: pathlib.Path) -> AsyncIterator[LocalHost]:
    server = LocalHost("mcp_app", tmp_path / "data", port=0, function_key=KEY, project_dir=tmp_path)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@contextlib.asynccontextmanager
async def connect(
    host: LocalHost, transport: str, headers: list[tuple[str, str]] | None = None
) -> AsyncIterator[ClientSession]:
    assert host.mcp_url == host.url + MCP_PREFIX
    if transport == "streamable-http":
        async with (
            httpx2.AsyncClient(headers=[("x-functions-key", KEY), *(headers or [])]) as http,
            streamable_http_client(host.mcp_url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session
    else:
        async with sse_client(f"{host.mcp_url}/sse?code={KEY}", headers=dict(headers or [])) as (
            read, write
        ), ClientSession(
            read, write
        ) as session:
            await session.initialize()
            yield session


def texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_tools_listed_and_called_like_the_extension(mcp_host: LocalHost, transport: str) -> None:
    async with connect(mcp_host, transport) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert sorted(tools) == ["boom", "context", "echo", "nothing", "rich"]
        assert tools["echo"].description == "Echoes the text."
        assert tools["echo"].input_schema == {
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "What to echo."},
                "tags": {"type": "array", "items": {"type": "string"}, "description": "Labels."},
            },
            "required": ["text"],
        }
        echoed = await session.call_tool("echo", {"text": "hi"})
        assert texts(echoed) == ["echo: hi"] and not echoed.is_error
        context = json.loads(texts(await session.call_tool("context", {"a": 1}))[0])
        assert context["name"] == "context" and context["arguments"] == {"a": 1}
        expected = "http-sse" if transport == "sse" else "http-streamable"
        assert context["transport"]["name"] == expected
        if transport == "sse":
            assert context["clientinfo"]["name"] == "mcp"
        else:  # stateless, as the extension: a later POST carries no client info
            assert context["clientinfo"] is None
        rich = await session.call_tool("rich", {})
        assert texts(rich) == ["one", "two"] and rich.structured_content == {"count": 2}
        assert (await session.call_tool("nothing", {})).content == []
        # A function that raises: an error result naming the tool, never the exception's text.
        failed = await session.call_tool("boom", {})
        assert failed.is_error and texts(failed) == ["An error occurred invoking 'boom'."]
        with pytest.raises(MCPError) as missing:
            await session.call_tool("echo", {"tags": ["x"]})
        assert missing.value.error.code == types.INVALID_PARAMS
        assert "Please provide: text" in missing.value.error.message


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_a_tool_call_carries_its_http_requests_headers(mcp_host: LocalHost, transport: str) -> None:
    """As the extension (McpTriggerTransportHelper.GetTransportInformation): every header of the
    request that carried the call, in `transport.properties.headers`, names as written, a repeated
    header's values joined with commas; App Service Authentication's principal among them."""
    sent = [("X-MS-CLIENT-PRINCIPAL-ID", "auth0|abc"), ("X-MS-CLIENT-PRINCIPAL-IDP", "auth0")]
    if transport == "streamable-http":
        sent += [("X-Repeated", "one"), ("x-repeated", "two")]
    async with connect(mcp_host, transport, sent) as session:
        context = json.loads(texts(await session.call_tool("context", {}))[0])
    headers = context["transport"]["properties"]["headers"]
    assert headers["X-MS-CLIENT-PRINCIPAL-ID"] == "auth0|abc"
    assert headers["X-MS-CLIENT-PRINCIPAL-IDP"] == "auth0"
    assert "x-ms-client-principal-id" not in headers
    if transport == "streamable-http":
        assert headers["X-Repeated"] == "one,two" and "x-repeated" not in headers
        assert headers["x-functions-key"] == KEY  # every header, the key too, as the extension
        assert context["transport"]["sessionId"] == headers.get("mcp-session-id")


async def test_requests_without_the_key_are_refused(mcp_host: LocalHost) -> None:
    async with aiohttp.ClientSession() as http:
        for method, path in (("POST", ""), ("GET", "/sse"), ("POST", "/message")):
            async with http.request(method, f"{mcp_host.mcp_url}{path}", data=b"{}") as response:
                assert response.status == 401
                assert (await response.json())["code"] == "unauthorized"
            async with http.request(method, f"{mcp_host.mcp_url}{path}?code=nope", data=b"{}") as response:
                assert response.status == 401


async def test_streamable_http_takes_only_post(mcp_host: LocalHost) -> None:
    headers = {"x-functions-key": KEY, "Accept": "text/event-stream"}
    url = f"{mcp_host.url}{MCP_PREFIX}"
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
        for method in ("GET", "DELETE", "PUT"):
            async with http.request(method, url, headers=headers) as answer:
                assert answer.status == 405 and answer.headers["Allow"] == "POST"


async def test_a_foreign_host_header_is_refused_on_loopback(mcp_host: LocalHost) -> None:
    # DNS rebinding: a web page reaching 127.0.0.1 through a name of its own is turned away.
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"x-functions-key": KEY, "Host": "evil.example",
               "Accept": "application/json, text/event-stream"}
    url = f"{mcp_host.url}{MCP_PREFIX}"
    async with aiohttp.ClientSession() as http:
        # The host's one rule for every route: a foreign Host is 421, a foreign Origin 403.
        async with http.post(url, json=body, headers=headers) as answer:
            assert answer.status == 421
            assert (await answer.json(content_type=None))["code"] == "misdirected_request"
        foreign_page = {**headers, "Host": f"127.0.0.1:{mcp_host.port}", "Origin": "http://evil.example"}
        async with http.post(url, json=body, headers=foreign_page) as answer:
            assert answer.status == 403
            assert (await answer.json(content_type=None))["code"] == "foreign_origin"


async def test_an_open_sse_stream_costs_no_cpu(mcp_host: LocalHost) -> None:
    # The ASGI bridge blocks in receive() until the client leaves; a spinning bridge would burn a
    # core for as long as an SSE client stays connected.
    async with connect(mcp_host, "sse"):
        started = time.process_time()
        await asyncio.sleep(1.5)
        spent = time.process_time() - started
    assert spent < 0.5, f"{spent:.2f}s of CPU while idle"


async def test_without_tool_triggers_there_is_no_mcp_endpoint(host: LocalHost) -> None:
    assert host.mcp_url is None
    async with aiohttp.ClientSession() as http, http.post(f"{host.url}{MCP_PREFIX}", data=b"{}") as answer:
        assert answer.status == 404


async def test_index_reads_the_tool_trigger_binding(tmp_path: pathlib.Path) -> None:
    server = LocalHost("mcp_app", tmp_path / "data", port=0, function_key=KEY, project_dir=tmp_path)
    await server.start()
    await server.stop()
    model = server.model
    assert model is not None
    tools = {f.tool_name: f for f in model.mcp_tools}
    assert tools["rich"].use_result_schema and not tools["echo"].use_result_schema
    assert tools["echo"].trigger_param == "context" and tools["echo"].name == "echo_tool"
    assert not model.unsupported
    assert input_schema(tools["nothing"]) == {"type": "object", "properties": {}, "required": []}


def test_results_are_shaped_as_the_extension_shapes_them() -> None:
    assert to_call_result(None, False).content == []
    assert to_call_result(b"bytes", False).content == [types.TextContent(text="bytes")]
    assert to_call_result(42, False).content == [types.TextContent(text="42")]
    whole = {"content": [{"type": "text", "text": "x"}], "isError": True}
    shaped = to_call_result(json.dumps({"type": "call_tool_result", "content": json.dumps(whole)}), True)
    assert shaped.is_error and shaped.content == [types.TextContent(text="x")]
    single = json.dumps({"type": "text", "content": json.dumps({"type": "text", "text": "y"})})
    assert to_call_result(single, True).content == [types.TextContent(text="y")]
    for unusable in ("not json", json.dumps([1]), json.dumps({"type": "text"})):
        with pytest.raises(ValueError):
            to_call_result(unusable, True)


async def test_host_json_can_make_the_endpoints_anonymous(tmp_path: pathlib.Path) -> None:
    (tmp_path / "host.json").write_text(json.dumps({
        "version": "2.0",
        "extensions": {"mcp": {"instructions": "Ask the echo tool.",
                               "system": {"webhookAuthorizationLevel": "Anonymous"}}},
    }))
    server = LocalHost("mcp_app", tmp_path / "data", port=0, function_key=KEY, project_dir=tmp_path)
    await server.start()
    try:
        async with (
            streamable_http_client(f"{server.url}{MCP_PREFIX}") as (read, write),
            ClientSession(read, write) as session,
        ):
            initialized = await session.initialize()
            assert initialized.instructions == "Ask the echo tool."
            assert initialized.server_info.name == "Azure Functions MCP server"
            assert texts(await session.call_tool("echo", {"text": "open"})) == ["echo: open"]
    finally:
        await server.stop()
