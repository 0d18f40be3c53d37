"""Tools of MCP servers on real servers in processes of their own: a third-party one
(mcp-server-time), the SDK's own server class with a side-effecting tool, and a hostile one; the
model is the scripted local server. Calls reach the server, results reach the model, and every
failure of a server becomes a tool result the model sees while the turn ends with an answer."""

from __future__ import annotations

import json
import pathlib
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from mcp_servers_support import McpProcess, server_fixture

from agents import (
    Agent,
    AgentConfigurationError,
    AwaitingApproval,
    InputMessage,
    MCPServer,
    ModelSettings,
    ToolDecision,
    TurnEvent,
    TurnProgress,
    TurnRequest,
    TurnResult,
    tool,
)
from agents.mcp import forget_listings
from agents.testing import ModelRequest, ModelServer, Reply
from state import AgentState, ErrorContent, FunctionResultContent, dump_state


@pytest.fixture(autouse=True)
def _fresh_listings() -> Iterator[None]:
    forget_listings()
    yield
    forget_listings()


own = server_fixture("own")
hostile = server_fixture("hostile")


def ask(cid: str, text: str = "go") -> TurnRequest:
    return TurnRequest(correlation_id=cid, messages=[InputMessage("user", text)])


def stored_results(state: AgentState) -> list[FunctionResultContent]:
    return [c for m in state.entries[-1].messages for c in m.contents if isinstance(c, FunctionResultContent)]


def stored_errors(state: AgentState) -> list[ErrorContent]:
    return [c for m in state.entries[-1].messages for c in m.contents if isinstance(c, ErrorContent)]


def tool_texts(request: ModelRequest) -> list[str]:
    return [m.text for m in request.messages if m.role == "tool"]


@tool
def local_note(text: str) -> str:
    """A Python tool beside the MCP ones (a bystander)."""
    return f"noted {text}"


async def test_a_third_party_servers_tool_result_reaches_the_model(
    tmp_path: pathlib.Path, model: ModelServer, settings: ModelSettings
) -> None:
    time_server = McpProcess("time", tmp_path / "seen.jsonl").start()
    try:
        agent = Agent(name="clock", model=settings, tools=[MCPServer(time_server.url, name="time")])
        model.script(
            Reply.tool_call("get_current_time", {"timezone": "Europe/Paris"}), Reply.text("It is late.")
        )
        result = await agent.run(AgentState(), ask("t1"))
    finally:
        time_server.stop()
    assert result.status == "succeeded" and result.text == "It is late."
    offered = {t.name: t for t in model.requests[0].tools}
    assert {"get_current_time", "convert_time"} <= set(offered)
    assert "MCP server 'time'" in (offered["get_current_time"].description or "")
    assert offered["get_current_time"].parameters["required"] == ["timezone"]  # the server's schema
    [answer] = tool_texts(model.requests[1])
    assert json.loads(answer)["timezone"] == "Europe/Paris"
    assert [e["name"] for e in time_server.seen("call")] == ["get_current_time"]


async def test_a_call_carries_the_runs_idempotency_key(
    own: McpProcess, model: ModelServer, settings: ModelSettings
) -> None:
    agent = Agent(
        name="writer", model=settings, tools=[MCPServer(own.url, name="own", allowed_tools=["append"])]
    )
    model.script(Reply.tool_call("append", {"text": "key-check"}, call_id="c-1"), Reply.text("done"))
    state = AgentState()
    events: list[TurnEvent] = []

    async def sink(event: TurnEvent) -> None:
        events.append(event)

    result = await agent.run(state, ask("run-key"), on_event=sink)
    assert result.status == "succeeded"
    # The stream's call and the stored result name the server (what the console shows).
    [call] = [e.data for e in events if e.type == "tool.call"]
    assert call["server"] == "own" and call["name"] == "append"
    assert [(r.model_extra or {}).get("server") for r in stored_results(state)] == ["own"]
    assert model.requests[0].tool_names == ["append"]  # shout is not in allowed_tools
    # The server declares an output schema ({"result": string}): its structured content is the result.
    assert [json.loads(t) for t in tool_texts(model.requests[1])] == [{"result": "appended key-check"}]
    [seen] = [e for e in own.seen("append") if e["text"] == "key-check"]
    assert seen["header"] == "run-key:c-1" and seen["meta"] == "run-key:c-1"


async def test_an_older_server_over_sse(
    tmp_path: pathlib.Path, model: ModelServer, settings: ModelSettings
) -> None:
    sse = McpProcess("own-sse", tmp_path / "seen.jsonl").start()
    try:
        agent = Agent(name="old", model=settings, tools=[MCPServer(sse.url, name="old", transport="sse")])
        model.script(Reply.tool_call("append", {"text": "over-sse"}, call_id="c-1"), Reply.text("done"))
        result = await agent.run(AgentState(), ask("sse-1"))
    finally:
        sse.stop()
    assert result.status == "succeeded"
    assert [json.loads(t) for t in tool_texts(model.requests[1])] == [{"result": "appended over-sse"}]
    assert [(e["header"], e["meta"]) for e in sse.seen("append")] == [("sse-1:c-1", "sse-1:c-1")]


async def test_a_server_cannot_send_the_app_to_another_address(
    tmp_path: pathlib.Path, model: ModelServer, settings: ModelSettings
) -> None:
    with socket.socket() as listener:  # the other address: anyone arriving is seen
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        (tmp_path / "elsewhere.port").write_text(str(listener.getsockname()[1]))
        server = McpProcess("elsewhere", tmp_path / "seen.jsonl").start()
        try:
            sly = MCPServer(server.url, name="sly", transport="sse", timeout=3.0)
            agent = Agent(name="safe", model=settings, tools=[sly, local_note])
            model.script(Reply.text("fine"))
            state = AgentState()
            result = await agent.run(state, ask("elsewhere"))
        finally:
            server.stop()
        assert result.status == "succeeded" and result.text == "fine"
        assert model.requests[0].tool_names == ["local_note"]
        [note] = stored_errors(state)
        assert "'sly' are unavailable" in (note.message or "")
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody came


async def test_a_prefix_names_the_tools_and_a_call_of_one_outside_allowed_tools_never_reaches_it(
    own: McpProcess, model: ModelServer, settings: ModelSettings
) -> None:
    server = MCPServer(own.url, name="own", allowed_tools=["shout"], tool_prefix="own_")
    agent = Agent(name="loud", model=settings, tools=[server])
    model.script(
        Reply.tool_calls([("own_shout", {"text": "hi"}, "c-1"), ("own_append", {"text": "sneaky"}, "c-2")]),
        Reply.text("done"),
    )
    result = await agent.run(AgentState(), ask("p1"))
    assert result.status == "succeeded"
    shout, sneaky = tool_texts(model.requests[1])
    assert json.loads(shout) == {"result": "HI"}
    assert "unknown tool 'own_append'" in sneaky
    assert not [e for e in own.seen("append") if e["text"] == "sneaky"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("fail", "answered an error: the database is on fire"),
        ("liar", "output schema does not allow"),
        ("huge", "more than the 1000000 it may send"),
        ("hang", "did not finish within 1.0 seconds"),
    ],
)
async def test_a_misbehaving_server_gives_an_error_result_and_the_turn_answers(
    hostile: McpProcess, model: ModelServer, settings: ModelSettings, name: str, expected: str
) -> None:
    agent = Agent(
        name="brave",
        model=settings,
        tool_timeout=1.0,
        tools=[MCPServer(hostile.url, name="hostile"), local_note],
    )
    model.script(
        Reply.tool_calls([(name, {}, "c-1"), ("local_note", {"text": "bystander"}, "c-2")]),
        Reply.text("I could not do it."),
    )
    state = AgentState()
    result = await agent.run(state, ask(f"bad-{name}"))
    assert result.status == "succeeded" and result.text == "I could not do it."
    failed, bystander = tool_texts(model.requests[1])
    assert expected in failed and failed.startswith("Error: ")
    assert bystander == "noted bystander"
    stored = stored_results(state)
    assert (stored[0].model_extra or {}).get("isError") is True
    assert len(dump_state(state)) < 100_000  # the 5 MB answer is never stored
    if name == "hang":
        [call] = [e for e in hostile.seen("call") if e["name"] == "hang"]

        def cancelled() -> bool:
            return any(e["request"] == call["request"] for e in hostile.seen("cancelled"))

        await _until(cancelled, "notifications/cancelled for the hung call")


async def test_images_and_resource_links_become_the_states_content_shapes(
    hostile: McpProcess, model: ModelServer, settings: ModelSettings
) -> None:
    agent = Agent(name="viewer", model=settings, tools=[MCPServer(hostile.url, name="hostile")])
    model.script(Reply.tool_call("image", {}), Reply.text("seen"))
    state = AgentState()
    assert (await agent.run(state, ask("img"))).status == "succeeded"
    [stored] = stored_results(state)
    assert stored.result == {
        "content": [
            {"$type": "data", "uri": "data:image/png;base64,iVBORw0KGgo=", "mediaType": "image/png"},
            {"$type": "uri", "uri": "file:///report.pdf", "mediaType": "application/pdf", "name": "report"},
        ]
    }


async def test_what_a_server_lists_is_bounded_and_checked(
    hostile: McpProcess, model: ModelServer, settings: ModelSettings
) -> None:
    agent = Agent(name="careful", model=settings, tools=[MCPServer(hostile.url, name="hostile")])
    model.script(Reply.text("ok"))
    state = AgentState()
    assert (await agent.run(state, ask("list"))).status == "succeeded"
    names = model.requests[0].tool_names
    assert "hang" in names and "remote_ref" not in names and not any(" " in n for n in names)
    notes = [c.message for c in stored_errors(state)]
    assert any("'bad.name/with spaces' is not a tool name" in (n or "") for n in notes)
    assert any("remote_ref" in (n or "") and "outside this schema" in (n or "") for n in notes)


async def test_a_server_that_is_down_leaves_its_tools_out_and_the_record_says_so(
    own: McpProcess, model: ModelServer, settings: ModelSettings
) -> None:
    down = MCPServer("http://127.0.0.1:9/mcp", name="gone", timeout=2.0)
    agent = Agent(name="patient", model=settings, tools=[down, MCPServer(own.url, name="own"), local_note])
    model.script(Reply.text("I answer anyway."))
    state = AgentState()
    result = await agent.run(state, ask("down-1"))
    assert result.status == "succeeded" and result.text == "I answer anyway."
    assert set(model.requests[0].tool_names) == {"append", "shout", "local_note"}
    assert "MCP server 'gone' are unavailable" in model.requests[0].messages[0].text
    [note] = stored_errors(state)
    assert note.error_code == "toolsUnavailable" and "'gone'" in (note.message or "")
    assert "127.0.0.1:9" not in (note.message or "")  # the record never carries the URL


async def test_approval_pauses_the_call_then_runs_it_once_or_tells_the_model(
    own: McpProcess, model: ModelServer, settings: ModelSettings
) -> None:
    server = MCPServer(own.url, name="own", requires_approval=["append"])
    agent = Agent(name="asker", model=settings, tools=[server])
    for cid, decision, expected in (
        ("ap-yes", ToolDecision(True), "appended approved-once"),
        ("ap-no", ToolDecision(False, "not today"), "Reason: not today"),
    ):
        text = "approved-once" if decision.approved else "rejected-never"
        model.script(Reply.tool_call("append", {"text": text}, call_id="c-1"), Reply.text("over"))
        state = AgentState()
        progress: Any = await agent.run_step(state, ask(cid), None)
        assert isinstance(progress, TurnProgress)
        waiting = await agent.run_step(state, ask(cid), progress)
        assert isinstance(waiting, AwaitingApproval)
        assert [(c.name, c.arguments) for c in waiting.calls] == [("append", {"text": text})]
        assert not [e for e in own.seen("append") if e["text"] == text]  # paused: not run
        decided = await agent.run_step(state, ask(cid), progress, decisions={"c-1": decision})
        assert isinstance(decided, TurnProgress)
        done = await agent.run_step(state, ask(cid), decided)
        assert isinstance(done, TurnResult) and done.status == "succeeded"
        assert expected in tool_texts(model.requests[-1])[0]
        ran = [e for e in own.seen("append") if e["text"] == text]
        assert len(ran) == (1 if decision.approved else 0)


def test_declaring_a_server_refuses_literal_secrets_clashes_and_missing_settings(
    monkeypatch: pytest.MonkeyPatch, settings: ModelSettings
) -> None:
    with pytest.raises(AgentConfigurationError, match="must name an app setting"):
        MCPServer("https://tools.example.com/mcp", name="ops", headers={"Authorization": "Bearer abc"})
    with pytest.raises(AgentConfigurationError, match="http"):
        MCPServer("file:///etc/passwd", name="ops")
    one = MCPServer("https://a.example.com/mcp", name="a", allowed_tools=["search"])
    two = MCPServer("https://b.example.com/mcp", name="b", allowed_tools=["search"])
    with pytest.raises(
        AgentConfigurationError, match="'search' is used by MCP server 'a' and by MCP server 'b'"
    ):
        Agent(name="clash", model=settings, tools=[one, two])
    Agent(
        name="apart",
        model=settings,
        tools=[
            one,
            MCPServer("https://b.example.com/mcp", name="b", allowed_tools=["search"], tool_prefix="b_"),
        ],
    )
    secret = MCPServer(
        "https://a.example.com/mcp", name="s", headers={"Authorization": "Bearer %E2E_NOT_SET%"}
    )
    agent = Agent(name="secretive", model=settings, tools=[secret])
    monkeypatch.delenv("E2E_NOT_SET", raising=False)
    with pytest.raises(AgentConfigurationError, match="app setting E2E_NOT_SET, which is not set"):
        agent.validate()
    monkeypatch.setenv("E2E_NOT_SET", "token")
    agent.validate()


async def _until(probe: Any, what: str, timeout: float = 10.0) -> None:
    import asyncio
    import time

    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not seen within {timeout}s")
        await asyncio.sleep(0.05)
