"""A conversation over real HTTP: several turns, tool calls, stored state, 202 and polling."""

from __future__ import annotations

import pathlib
import shutil
import time

import aiohttp
from e2e_support import OWN_SCHEMA, REFERENCE_SCHEMA, REPO, Client, HostProcess, history, schema_errors, texts

from agents.testing import ModelRequest, ModelServer, Reply


def conversation(request: ModelRequest) -> list[tuple[str, str]]:
    """What the model was sent, without the system messages: (role, text or the tool calls)."""
    seen = []
    for m in request.messages:
        if m.role in ("system", "developer"):
            continue
        if m.tool_calls:
            seen.append((m.role, "calls " + ",".join(c.name for c in m.tool_calls)))
        else:
            seen.append((m.role, m.text))
    return seen


async def test_multi_turn_conversation_with_tools(client: Client, model: ModelServer) -> None:
    model.script(
        Reply.text("Bonjour! Where are you going?"),
        Reply.tool_call("get_weather", {"city": "Paris"}),
        Reply.text("Paris is lovely today."),
        Reply.tool_call("remember", {"fact": "The traveller is going to Paris in May."}),
        Reply.text("Noted: Paris in May."),
        Reply.text("You are going to Paris in May."),
    )
    first = await client.run("concierge", "Hello, I am planning a trip.")
    assert first.status == 200, first.body
    session = first.json()["session_id"]
    assert first.headers["x-ms-session-id"] == session and len(session) == 32
    assert first.json()["response"]["text"] == "Bonjour! Where are you going?"

    second = await client.run("concierge", "What is the weather in Paris?", session)
    assert second.status == 200, second.body
    assert second.json()["response"]["text"] == "Paris is lovely today."
    third = await client.run("concierge", "Remember that I go there in May.", session)
    assert third.status == 200, third.body
    fourth = await client.run("concierge", "Where am I going?", session)
    assert fourth.status == 200, fourth.body
    assert fourth.json()["response"]["text"] == "You are going to Paris in May."
    assert model.pending_replies == 0

    # The replayed history reached the model: each call saw every earlier turn, tool rounds included.
    assert len(model.requests) == 6
    tool_message = model.requests[2].messages[-1]
    assert tool_message.role == "tool" and '"city": "Paris"' in tool_message.text
    assert conversation(model.requests[5]) == [
        ("user", "Hello, I am planning a trip."),
        ("assistant", "Bonjour! Where are you going?"),
        ("user", "What is the weather in Paris?"),
        ("assistant", "calls get_weather"),
        ("tool", tool_message.text),
        ("assistant", "Paris is lovely today."),
        ("user", "Remember that I go there in May."),
        ("assistant", "calls remember"),
        ("tool", model.requests[4].messages[-1].text),
        ("assistant", "Noted: Paris in May."),
        ("user", "Where am I going?"),
    ]
    # The memory provider's state (in the state bag) came back into the instructions of turn 4.
    system = " ".join(m.text for m in model.requests[5].messages if m.role in ("system", "developer"))
    assert "The traveller is going to Paris in May." in system
    assert {t.name for t in model.requests[5].tools} >= {"get_weather", "get_time", "remember"}

    stored = await client.session_state("concierge", session)
    assert stored["schema_version"] == "1.8.0"
    assert [t["status"] for t in stored["turns"]] == ["succeeded"] * 4
    assert all(t["usage"]["totalTokenCount"] > 0 for t in stored["turns"])
    facts = stored["state_bag"]["memory"]["facts"]
    assert [f["text"] for f in facts] == ["The traveller is going to Paris in May."]
    entries = history(stored["state"])
    assert [e["$type"] for e in entries] == ["request", "response"] * 4
    assert [e["correlationId"] for e in entries[::2]] == [
        a.json()["correlation_id"] for a in (first, second, third, fourth)
    ]
    calls = [c for m in entries[3]["messages"] for c in m["contents"] if c["$type"] == "functionCall"]
    assert calls[0]["name"] == "get_weather" and calls[0]["arguments"] == {"city": "Paris"}
    assert texts(entries[6]) == ["Where am I going?"]

    assert schema_errors(stored["state"], OWN_SCHEMA) == []
    assert schema_errors(stored["state"], REFERENCE_SCHEMA) == []


async def test_agent_routes_need_the_function_key(client: Client) -> None:
    refused = await client.post("/api/agents/assistant/run", json_body={"message": "hi"}, key=False)
    assert refused.status == 401, refused.body
    health = await client.get("/api/health", key=False)
    assert health.status == 200, health.body


async def test_202_then_polling_the_run_resource(client: Client, model: ModelServer) -> None:
    model.script(Reply.text("ready"), Reply.delay(1.0, then=Reply.text("late but here")))
    opened = await client.run("assistant", "first")
    session = opened.json()["session_id"]

    accepted = await client.run("assistant", "take your time", session, wait_for_response=False)
    assert accepted.status == 202, accepted.body
    location = accepted.headers["location"]
    body = accepted.json()
    assert body["status"] == "pending" and body["location"] == location
    assert location.endswith(f"/api/agents/assistant/sessions/{session}/runs/{body['correlation_id']}")
    assert accepted.headers["retry-after"] == "1"

    pending = await client.get(location)
    assert pending.status == 200 and pending.json()["status"] == "pending", pending.body

    started = time.perf_counter()
    done = await client.get(location + "?wait=20")
    assert done.status == 200, done.body
    result = done.json()
    assert result["status"] == "succeeded", result
    assert result["response"]["text"] == "late but here"
    # The long poll returned because the turn finished, not because its wait ran out.
    assert time.perf_counter() - started < 10
    assert [m.last_user_text for m in model.requests] == ["first", "take your time"]

    # The header form of not waiting behaves the same.
    model.script(Reply.text("quick"))
    headed = await client.post(
        "/api/agents/assistant/run",
        json_body={"message": "no wait", "session_id": session},
        headers={"x-ms-wait-for-response": "false"},
    )
    assert headed.status == 202, headed.body
    again = await client.get(headed.headers["location"] + "?wait=20")
    assert again.json()["status"] == "succeeded" and again.json()["response"]["text"] == "quick"


async def test_with_no_model_configured_the_host_answers_offline(
    tmp_path: pathlib.Path, http: aiohttp.ClientSession
) -> None:
    # Run from a directory without local.settings.json, so nothing configures a model.
    shutil.copy(REPO / "host.json", tmp_path / "host.json")
    host = HostProcess(tmp_path / "data", None, tmp_path / "host.log", function_key=None, cwd=tmp_path)
    host.start()
    try:
        assert "no model configured: using the offline model server" in host.log()
        assert "function keys are not enforced" in host.log()
        client = Client(http, host.url, key=None)
        answer = await client.run("assistant", "hello there")
        assert answer.status == 200, (answer.body, host.log())
        assert answer.json()["response"]["text"] == "echo: hello there"
        tools = await client.run("concierge", 'call:get_weather {"city": "Oslo"}')
        assert tools.status == 200, tools.body
        assert tools.json()["response"]["text"].startswith('tool results: get_weather: {"city": "Oslo"')
        # With everything answered, Ctrl-C (SIGTERM) is a clean stop: nothing abandoned.
        host.stop()
        assert host.proc is not None and host.proc.returncode == 0
        assert "abandoning" not in host.log(), host.log()
    finally:
        host.stop()
