"""Agents as MCP tools: the official MCP client against `python -m devhost`, over both transports.

The host emulates the Azure Functions MCP extension for the app's tool triggers (the same paths,
transports and key rule), so these are the calls an IDE or another agent makes.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import aiohttp
import httpx2
import pytest
from e2e_support import FUNCTION_KEY, Client, HostProcess, eventually
from mcp import Client as McpClient
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_support import MCP_PATH, TRANSPORTS, Transport, mcp_session, text_of, texts_of
from test_e2e_conversation import conversation

from agents.testing import ModelRequest, ModelServer, Reply

QUERY_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to ask or tell the assistant agent."},
        "session_id": {
            "type": "string",
            "description": (
                "The conversation to continue: the session_id a previous call returned. "
                "Leave it out to start a new conversation."
            ),
        },
        "user_id": {
            "type": "string",
            "description": (
                "The user this call acts for, when the caller serves several: a conversation "
                "belongs to the user who started it. Leave it out otherwise."
            ),
        },
    },
    "required": ["query"],
}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_lists_every_agent_as_a_tool(
    e2e_host: HostProcess, model: ModelServer, transport: Transport
) -> None:
    async with mcp_session(e2e_host.url, transport, FUNCTION_KEY) as session:
        listed = await session.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert sorted(tools) == ["assistant", "concierge", "reviewer", "writer"]
    assert tools["assistant"].input_schema == QUERY_SCHEMA
    assert tools["assistant"].description is not None
    assert tools["assistant"].description.startswith("A plain, helpful assistant.")
    assert "session_id" in tools["assistant"].description
    assert tools["reviewer"].description is not None
    assert tools["reviewer"].description.startswith("Reviews a draft")
    assert model.requests == []  # listing runs nothing


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_two_calls_in_one_session_share_the_conversation(
    e2e_host: HostProcess, client: Client, model: ModelServer, transport: Transport
) -> None:
    model.script(Reply.text("Nice to meet you, Ada."), Reply.text("Your name is Ada."))
    async with mcp_session(e2e_host.url, transport, FUNCTION_KEY) as session:
        first = await session.call_tool("assistant", {"query": "My name is Ada."})
        assert not first.is_error, first
        assert text_of(first) == "Nice to meet you, Ada."
        structured = first.structured_content
        assert isinstance(structured, dict) and structured["status"] == "succeeded"
        session_id = structured["session_id"]
        assert len(session_id) == 32
        assert any(session_id in text for text in texts_of(first)[1:])  # the model sees it too
        second = await session.call_tool("assistant", {"query": "What is my name?", "session_id": session_id})
    assert not second.is_error, second
    assert text_of(second) == "Your name is Ada."
    assert second.structured_content["session_id"] == session_id
    # The second model call was sent the first turn: the answer could use it.
    assert conversation(model.requests[1]) == [
        ("user", "My name is Ada."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "What is my name?"),
    ]
    # An ordinary run: stored in the session and visible in the sessions API under its run id.
    stored = await client.get(f"/api/agents/assistant/sessions/{session_id}")
    assert stored.status == 200, stored.body
    turns = stored.json()["turns"]
    assert [t["status"] for t in turns] == ["succeeded", "succeeded"]
    assert [t["correlation_id"] for t in turns] == [
        first.structured_content["correlation_id"], second.structured_content["correlation_id"]
    ]
    run = await client.get(
        f"/api/agents/assistant/sessions/{session_id}/runs/{second.structured_content['correlation_id']}"
    )
    assert run.status == 200 and run.json()["response"]["text"] == "Your name is Ada."


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_failing_model_is_an_error_result_not_a_protocol_error(
    e2e_host: HostProcess, client: Client, model: ModelServer, transport: Transport
) -> None:
    model.script(Reply.error(400, "the prompt was refused", code="content_filter"))
    async with mcp_session(e2e_host.url, transport, FUNCTION_KEY) as session:
        result = await session.call_tool("assistant", {"query": "Say something."})
    assert result.is_error
    assert "content_filter" in text_of(result) and "the prompt was refused" in text_of(result)
    structured = result.structured_content
    assert structured["status"] == "failed" and structured["code"] == "content_filter"
    assert structured["retryable"] is False
    stored = await client.get(f"/api/agents/assistant/sessions/{structured['session_id']}")
    assert [t["status"] for t in stored.json()["turns"]] == ["failed"]


async def test_a_tool_calls_run_is_claimed_as_every_run_is(
    e2e_host: HostProcess, client: Client, model: ModelServer
) -> None:
    # The call's turn goes in through the same submit path as `POST .../run`: its run is claimed in
    # the stream store, so while its first step runs (the stored state does not show it until
    # it ends) the HTTP API sees the session busy, and a `reject` run is refused at once.
    async def slow_first(request: ModelRequest) -> Reply:
        if request.last_user_text == "slow call":
            await asyncio.sleep(3)
            return Reply.text("done slowly")
        return Reply.text("never")

    model.handler = slow_first
    session_id = f"mcp-claimed-{uuid.uuid4().hex[:8]}"
    async with mcp_session(e2e_host.url, "streamable-http", FUNCTION_KEY) as session:
        arguments = {"query": "slow call", "session_id": session_id}
        call = asyncio.create_task(session.call_tool("assistant", arguments))

        async def at_the_model() -> bool:
            return any(r.last_user_text == "slow call" for r in model.requests)

        await eventually(at_the_model, "the tool call's model request")
        started = time.monotonic()
        late = await client.run("assistant", "late", session_id, multitask_strategy="reject")
        assert late.status == 409 and late.json()["code"] == "session_busy", late.body
        assert time.monotonic() - started < 1.5  # at once, not after the call's step
        result = await call
    assert not result.is_error, result
    assert text_of(result) == "done slowly"
    assert not any(r.last_user_text == "late" for r in model.requests)
    stored = await client.get(f"/api/agents/assistant/sessions/{session_id}")
    assert [t["status"] for t in stored.json()["turns"]] == ["succeeded"]


async def test_structured_output_comes_back_as_structured_content(
    e2e_host: HostProcess, model: ModelServer
) -> None:
    model.script(Reply.text('{"approved": false, "feedback": "Shorten the intro."}'))
    async with mcp_session(e2e_host.url, "streamable-http", FUNCTION_KEY) as session:
        result = await session.call_tool("reviewer", {"query": "Review: a long intro."})
    assert not result.is_error, result
    assert result.structured_content["structured"] == {"approved": False, "feedback": "Shorten the intro."}


async def test_bad_arguments_are_answered_without_running_anything(
    e2e_host: HostProcess, model: ModelServer
) -> None:
    async with mcp_session(e2e_host.url, "streamable-http", FUNCTION_KEY) as session:
        # A required property missing: the extension refuses the call itself (invalid params).
        with pytest.raises(MCPError) as refused:
            await session.call_tool("assistant", {"session_id": "abc"})
        assert refused.value.error.code == -32602 and "query" in refused.value.error.message
        with pytest.raises(MCPError):
            await session.call_tool("nobody", {"query": "hi"})
        # What the agent's host refuses is a tool error naming the problem.
        bad_session = await session.call_tool("assistant", {"query": "hi", "session_id": "a/b"})
        assert bad_session.is_error and "invalid_session_id" in text_of(bad_session)
        blank = await session.call_tool("assistant", {"query": "   "})
        assert blank.is_error and "empty_message" in text_of(blank)
        wrong_type = await session.call_tool("assistant", {"query": 42})
        assert wrong_type.is_error and "invalid_type" in text_of(wrong_type)
    assert model.requests == []


@pytest.mark.parametrize("key", [None, "wrong-key"])
async def test_the_system_key_is_required_on_every_endpoint(
    e2e_host: HostProcess, http: aiohttp.ClientSession, key: str | None
) -> None:
    headers = {"x-functions-key": key} if key else {}
    initialize = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}},
    }
    accept = {"Accept": "application/json, text/event-stream"}
    base = e2e_host.url + MCP_PATH
    async with http.post(base, json=initialize, headers={**headers, **accept}) as response:
        assert response.status == 401
    async with http.get(base + "/sse", headers=headers) as response:
        assert response.status == 401
    async with http.post(base + "/message?session_id=00", json=initialize, headers=headers) as response:
        assert response.status == 401
    # And through the real client: the connection is refused, nothing is listed.
    for transport in TRANSPORTS:
        with pytest.raises(Exception) as caught:
            async with mcp_session(e2e_host.url, transport, key) as session:
                await session.list_tools()
        failures = _leaves(caught.value)
        assert any(
            (isinstance(f, httpx2.HTTPStatusError) and f.response.status_code == 401)
            or (isinstance(f, MCPError) and "error response" in f.error.message)
            for f in failures
        ), failures


def _leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups; anyio's task groups wrap the client's."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


async def test_the_key_in_the_query_string_is_accepted(
    e2e_host: HostProcess, http: aiohttp.ClientSession
) -> None:
    initialize = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}},
    }
    async with http.post(
        f"{e2e_host.url}{MCP_PATH}?code={FUNCTION_KEY}", json=initialize,
        headers={"Accept": "application/json, text/event-stream"},
    ) as response:
        assert response.status == 200
        assert "Azure Functions MCP server" in await response.text()


async def test_the_high_level_client_works_too(e2e_host: HostProcess, model: ModelServer) -> None:
    # `mcp.Client` probes the newest protocol era first (server/discover) and falls back to the
    # initialize handshake: either way it reaches the agents.
    model.script(Reply.text("Hi from the modern client."))
    async with (
        httpx2.AsyncClient(headers={"x-functions-key": FUNCTION_KEY}, timeout=60) as http,
        McpClient(streamable_http_client(e2e_host.url + MCP_PATH, http_client=http)) as client,
    ):
        assert "assistant" in [t.name for t in (await client.list_tools()).tools]
        result = await client.call_tool("assistant", {"query": "Hello"})
    assert not result.is_error and text_of(result) == "Hi from the modern client."
