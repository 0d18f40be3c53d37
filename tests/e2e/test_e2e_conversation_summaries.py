"""Conversation summaries over real HTTP, on the real local host with the scripted model: when a
concierge session of u1 ends (reset, delete or idle expiry) its conversation is summarised into
u1's memory once, and u1's later session about the same topic gets the summary in the model's
instructions (quoted as data), while a session about something else, and u2, do not."""

from __future__ import annotations

import asyncio
import json
import pathlib
import uuid
from typing import Any

import aiohttp
from e2e_support import Client, HostProcess

from agents.testing import ModelRequest, ModelServer, Reply

SUMMARY_ASK = "Summarise the conversation below"
SUMMARY = "The traveller planned a kayaking trip in the Lofoten islands for July."


def _user(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"  # the shared host's memory outlives one test


def _system(request: ModelRequest) -> str:
    return "\n".join(m.text for m in request.messages if m.role in ("system", "developer"))


def _summary_calls(model: ModelServer) -> list[ModelRequest]:
    return [r for r in model.requests if any(SUMMARY_ASK in m.text for m in r.messages)]


def _summaries(model: ModelServer) -> None:
    """Summary calls are answered by the handler (the script is for the turns)."""

    def answer(request: ModelRequest) -> Reply | None:
        if any(SUMMARY_ASK in m.text for m in request.messages):
            return Reply.text(SUMMARY)
        return None

    model.handler = answer


async def _summaries_of(client: Client, user: str) -> list[dict[str, Any]]:
    answer = await client.get(f"/api/users/{user}/memories")
    assert answer.status == 200, answer.body
    return [i for i in answer.json()["items"] if (i.get("metadata") or {}).get("kind") == "summary"]


async def _await_summary(client: Client, user: str, timeout: float = 60.0) -> list[dict[str, Any]]:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        found = await _summaries_of(client, user)
        if found or asyncio.get_running_loop().time() > deadline:
            return found
        await asyncio.sleep(0.3)


async def _session_about_kayaks(client: Client, model: ModelServer, user: str) -> str:
    model.script(Reply.text("Lofoten in July is perfect for kayaking."))
    answer = await client.run("concierge", "Plan a kayaking trip to Lofoten in July.", user_id=user)
    assert answer.status == 200, answer.body
    return str(answer.json()["session_id"])


async def test_a_reset_session_is_summarised_once_and_recalled_for_its_topic_only(
    client: Client, model: ModelServer
) -> None:
    u1, u2 = _user("u1"), _user("u2")
    _summaries(model)
    session = await _session_about_kayaks(client, model, u1)
    path = f"/api/agents/concierge/sessions/{session}/reset?user_id={u1}"
    first, second = await client.post(path), await client.post(path)
    assert first.status == 202 and second.status in (202, 404), second.body
    [item] = await _await_summary(client, u1)
    assert item["text"] == SUMMARY
    assert item["source_session"] == session
    assert item["metadata"]["reason"] == "reset"
    transcript = _summary_calls(model)[0].messages[-1].text
    assert "Plan a kayaking trip to Lofoten in July." in transcript
    await asyncio.sleep(3)  # a second hook, if any, would have run by now
    assert len(_summary_calls(model)) == 1
    assert len(await _summaries_of(client, u1)) == 1

    model.script(Reply.text("Kayaks are waiting."), Reply.text("Paris it is."), Reply.text("Hello."))
    related = await client.run("concierge", "Which kayaking gear for Lofoten?", user_id=u1)
    unrelated = await client.run("concierge", "Recommend Paris restaurants.", user_id=u1)
    other = await client.run("concierge", "Which kayaking gear for Lofoten?", user_id=u2)
    assert related.status == unrelated.status == other.status == 200
    turns = [r for r in model.requests if r not in _summary_calls(model)]
    seen = _system(turns[-3])
    block = seen.split("<past-conversations>\n", 1)[1].split("\n</past-conversations>", 1)[0]
    assert [s["text"] for s in json.loads(block)] == [SUMMARY]
    assert "never instructions" in seen
    assert SUMMARY not in _system(turns[-2])
    assert SUMMARY not in _system(turns[-1])
    assert await _summaries_of(client, u2) == []


async def test_a_deleted_session_is_summarised(client: Client, model: ModelServer) -> None:
    u1 = _user("u1")
    _summaries(model)
    session = await _session_about_kayaks(client, model, u1)
    gone = await client.request("DELETE", f"/api/agents/concierge/sessions/{session}?user_id={u1}")
    assert gone.status == 202, gone.body
    [item] = await _await_summary(client, u1)
    assert item["metadata"]["reason"] == "delete" and item["source_session"] == session


async def test_an_idle_session_that_expires_is_summarised(
    tmp_path: pathlib.Path, model: ModelServer, http: aiohttp.ClientSession
) -> None:
    ttl = 4  # a host of its own whose concierge sessions expire after 4 idle seconds
    host = HostProcess(
        tmp_path / "data",
        model.base_url,
        tmp_path / "host.log",
        extra_env={"DURABLE_AGENTS_SESSION_TTL__concierge": str(ttl)},
    ).start()
    try:
        client = Client(http, host.url)
        u1 = _user("u1")
        _summaries(model)
        session = await _session_about_kayaks(client, model, u1)
        [item] = await _await_summary(client, u1, timeout=ttl + 60)
        assert item["metadata"]["reason"] == "expiry" and item["source_session"] == session
        gone = await client.get(f"/api/agents/concierge/sessions/{session}?user_id={u1}")
        assert gone.status == 404
    finally:
        host.stop()
