"""An agent calling the tools of MCP servers on the real host: a finished call survives `kill -9`
without running again, a call that needs approval pauses the run and runs once when approved, and
servers that fail every way they can leave the turn with an answer and other sessions untouched.
The MCP servers run in processes of their own (tests/mcp_servers_support.py)."""

from __future__ import annotations

import asyncio
import json
import pathlib
from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest
from e2e_support import Client, HostProcess, eventually, history, kill_at_model_call
from mcp_servers_support import McpProcess, server_fixture

from agents.testing import ModelRequest, ModelServer, Reply

# The servers' URLs are app settings, as they would be in Azure.
MCP_APP = '''
from agents import Agent, MCPServer, tool
from hosting import build_app


@tool
def note(text: str) -> str:
    """Note something (a Python tool beside the MCP ones).

    Args:
        text: What to note.
    """
    return f"noted {text}"


agent = Agent(
    name="operator",
    instructions="Use the tools.",
    tool_timeout=2.0,
    tools=[
        MCPServer("%E2E_OWN_MCP_URL%", name="own", allowed_tools=["append"]),
        MCPServer("%E2E_OWN_MCP_URL%", name="guarded", allowed_tools=["append"], tool_prefix="guarded_",
                  requires_approval=True),
        MCPServer("%E2E_HOSTILE_MCP_URL%", name="hostile", allowed_tools=["fail", "liar", "huge", "hang"]),
        note,
    ],
)
# No tool timeout: only a cancel ends its hung call.
patient = Agent(
    name="patient",
    tool_timeout=None,
    tools=[MCPServer("%E2E_HOSTILE_MCP_URL%", name="hostile", allowed_tools=["hang"], timeout=600)],
)
app = build_app([agent, patient], console=False)
'''
AGENT = "operator"


own = server_fixture("own")
hostile = server_fixture("hostile")


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    # Not pooled: connections to a killed host must not be reused for the restarted one.
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as session:
        yield session


def _host(
    root: pathlib.Path, model: ModelServer, own: McpProcess, hostile: McpProcess, **env: str
) -> HostProcess:
    project = root / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "function_app.py").write_text(MCP_APP)
    settings = {"E2E_OWN_MCP_URL": own.url, "E2E_HOSTILE_MCP_URL": hostile.url, **env}
    return HostProcess(root / "data", model.base_url, root / "host.log", cwd=project, extra_env=settings)


@pytest.fixture(scope="module", params=["sqlite", "redis"])
def mcp_host(
    request: pytest.FixtureRequest,
    model_server: ModelServer,
    own: McpProcess,
    hostile: McpProcess,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[HostProcess]:
    """One host for the tests that do not kill it, on the embedded stream store and on Redis."""
    env = (
        {"DURABLE_AGENTS_STREAM_REDIS": request.getfixturevalue("redis_url")}
        if request.param == "redis"
        else {}
    )
    host = _host(
        tmp_path_factory.mktemp(f"mcp-host-{request.param}"), model_server, own, hostile, **env
    ).start()
    yield host
    host.stop()


def appended(own: McpProcess, text: str) -> list[str]:
    return [e["header"] for e in own.seen("append") if e["text"] == text]


def tool_results(request: ModelRequest) -> list[str]:
    return [m.text for m in request.messages if m.role == "tool"]


async def test_kill_9_after_an_mcp_call_finished_does_not_run_it_again(
    tmp_path: pathlib.Path,
    model: ModelServer,
    http: aiohttp.ClientSession,
    own: McpProcess,
    hostile: McpProcess,
) -> None:
    host = _host(tmp_path, model, own, hostile)
    session, run = "mcp-kill", "mcp-kill-run"
    # Step 0 asks for the MCP tool, step 1 calls it, step 2 (the next model call) never answers.
    model.script(Reply.tool_call("append", {"text": "kill-once"}, call_id="c-1"), Reply.hang())
    host.start()
    try:
        client = Client(http, host.url)
        sent = await client.run(AGENT, "append it", session, wait_for_response=False, correlation_id=run)
        assert sent.status == 202, sent.body
    finally:
        await kill_at_model_call(host, model, 2, "the model call after the MCP call")
    assert appended(own, "kill-once") == [f"{run}:c-1"]

    model.handler = lambda request: Reply.text("appended")
    host.start()
    try:
        client = Client(http, host.url)
        done = await client.get(f"/api/agents/{AGENT}/sessions/{session}/runs/{run}?wait=30")
        assert done.status == 200 and done.json()["status"] == "succeeded", (done.body, host.log())
        # The call ran once; only the model call in flight was asked again, with its result.
        assert appended(own, "kill-once") == [f"{run}:c-1"]
        assert [len(tool_results(r)) for r in model.requests] == [0, 1, 1]
        assert model.requests[2].messages == model.requests[1].messages
        entries = history((await client.session_state(AGENT, session))["state"])
        assert [m["role"] for m in entries[1]["messages"]] == ["assistant", "tool", "assistant"]
    finally:
        host.stop()


async def test_a_call_that_needs_approval_pauses_and_runs_once_or_tells_the_model(
    mcp_host: HostProcess, model: ModelServer, http: aiohttp.ClientSession, own: McpProcess
) -> None:
    client = Client(http, mcp_host.url)
    for run, approved in (
        (f"approve-{mcp_host.data_dir.parent.name}", True),
        (f"reject-{mcp_host.data_dir.parent.name}", False),
    ):
        text = f"guarded-{run}"
        model.script(Reply.tool_call("guarded_append", {"text": text}, call_id="c-1"), Reply.text("over"))
        answer = await client.run(AGENT, "append it", run, correlation_id=run)
        assert answer.status == 202 and answer.json()["status"] == "awaiting_approval", answer.body
        [pending] = answer.json()["approvals"]
        assert pending["name"] == "guarded_append" and pending["arguments"] == {"text": text}
        assert appended(own, text) == []
        path = f"/api/agents/{AGENT}/sessions/{run}/runs/{run}"
        decision = {"call_id": "c-1", "approved": approved, "reason": "not this one"}
        decided = await client.post(path + "/approvals", json_body=decision)
        assert decided.status == 200, decided.body
        done = await client.get(path + "?wait=30")
        assert done.json()["status"] == "succeeded" and done.json()["response"]["text"] == "over", done.body
        [result] = tool_results(model.requests[-1])
        if approved:
            assert json.loads(result) == {"result": f"appended {text}"}
            assert appended(own, text) == [f"{run}:c-1"]
        else:
            assert "Rejected" in result and "not this one" in result
            assert appended(own, text) == []


async def test_failing_servers_leave_the_turn_an_answer_and_bystanders_untouched(
    mcp_host: HostProcess, model: ModelServer, http: aiohttp.ClientSession
) -> None:
    client = Client(http, mcp_host.url)
    session = f"hostile-{mcp_host.data_dir.parent.name}"
    bystander = f"bystander-{mcp_host.data_dir.parent.name}"

    def handler(request: ModelRequest) -> Reply:
        if request.last_user_text == "just talk":
            return Reply.text("talking")
        if not tool_results(request):
            calls: list[tuple[str, dict[str, str], str]] = [
                (name, {}, f"c-{name}") for name in ("fail", "liar", "huge", "hang")
            ]
            return Reply.tool_calls([*calls, ("note", {"text": "still here"}, "c-note")])
        return Reply.text("some tools failed")

    model.handler = handler
    hostile_run = asyncio.ensure_future(client.run(AGENT, "try everything", session, correlation_id=session))
    other = await client.run(AGENT, "just talk", bystander, correlation_id=bystander)
    assert other.status == 200 and other.json()["response"]["text"] == "talking", other.body
    answer = await hostile_run
    if answer.status == 202:
        answer = await client.get(f"/api/agents/{AGENT}/sessions/{session}/runs/{session}?wait=30")
    assert answer.json()["status"] == "succeeded", answer.body
    assert answer.json()["response"]["text"] == "some tools failed"
    [last] = [r for r in model.requests if r.last_user_text == "try everything" and tool_results(r)]
    fail, liar, huge, hang, note = tool_results(last)
    assert "answered an error" in fail and "output schema does not allow" in liar
    assert "more than the 1000000" in huge and "did not finish within 2.0 seconds" in hang
    assert note == "noted still here"
    state = await client.session_state(AGENT, session)
    assert len(json.dumps(state)) < 200_000  # the 5 MB answer was never stored


async def test_cancelling_a_run_mid_call_tells_the_server(
    mcp_host: HostProcess, model: ModelServer, http: aiohttp.ClientSession, hostile: McpProcess
) -> None:
    client = Client(http, mcp_host.url)
    run = f"cancel-{mcp_host.data_dir.parent.name}"
    model.script(Reply.tool_call("hang", {}, call_id="c-1"), Reply.text("never"))
    before = len([e for e in hostile.seen("call") if e["name"] == "hang"])
    sent = await client.run("patient", "wait", run, wait_for_response=False, correlation_id=run)
    assert sent.status == 202, sent.body

    async def hung() -> list[dict[str, object]]:
        return [e for e in hostile.seen("call") if e["name"] == "hang"][before:]

    [call] = await eventually(hung, "the hung call reaching the server", timeout=30)
    path = f"/api/agents/patient/sessions/{run}/runs/{run}"
    answer = await client.post(path + "/cancel")
    assert answer.status == 202 and answer.json()["status"] == "cancel_requested", answer.body

    async def told() -> bool:
        return any(e["request"] == call["request"] for e in hostile.seen("cancelled"))

    await eventually(told, "notifications/cancelled for the hung call", timeout=30)
    done = await client.get(path + "?wait=30")
    assert done.json()["status"] == "cancelled", done.body
    assert len(model.requests) == 1  # the model was not asked again after the cancel
