"""Conversation summaries over real HTTP, on the real local host with the scripted model: when a
concierge session of u1 ends (reset, delete or idle expiry) its conversation is summarised into
u1's memory once, and u1's later session about the same topic gets the summary in the model's
instructions (quoted as data), while a session about something else, and u2, do not; an erasure
of u1 that begins while the summary is being written is not undone by it.

The summary calls go to the model server's summaries route (tests/conftest.py), apart from the
script: a host summarises in the background, so a call may arrive during another test."""

from __future__ import annotations

import asyncio
import json
import pathlib
import threading
import uuid
from typing import Any

import aiohttp
from e2e_support import Client, HostProcess, eventually

from agents.memory import SUMMARY_INSTRUCTIONS
from agents.testing import ModelRequest, ModelRoute, ModelServer, Reply

SUMMARIES = "conversation-summaries"  # the route tests/conftest.py gives the model server


def _user(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"  # the shared host's memory outlives one test


def _system(request: ModelRequest) -> str:
    return "\n".join(m.text for m in request.messages if m.role in ("system", "developer"))


def _route(model: ModelServer) -> ModelRoute:
    route = model.routed(SUMMARIES)
    assert route is not None
    return route


def _summary_calls(model: ModelServer, user: str) -> list[ModelRequest]:
    """This test's summary calls: those of `user`'s conversation (it names the user)."""
    return [r for r in _route(model).requests if user in (r.last_user_text or "")]


def _asked(user: str) -> str:
    return f"Plan a kayaking trip to Lofoten in July for {user}."


def _hold_summaries(model: ModelServer, user: str) -> threading.Event:
    """Hold every summary call until the event returned is set, then answer `user`'s summary."""
    release = threading.Event()

    async def held(request: ModelRequest) -> Reply:
        await asyncio.to_thread(release.wait, 60)
        return Reply.text(f"Earlier the user asked: {_asked(user)}")

    model.route(SUMMARIES, _route(model).match, held)
    return release


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
    answer = await client.run("concierge", _asked(user), user_id=user)
    assert answer.status == 200, answer.body
    return str(answer.json()["session_id"])


async def test_a_reset_session_is_summarised_once_and_recalled_for_its_topic_only(
    client: Client, model: ModelServer
) -> None:
    u1, u2 = _user("u1"), _user("u2")
    session = await _session_about_kayaks(client, model, u1)
    path = f"/api/agents/concierge/sessions/{session}/reset?user_id={u1}"
    first, second = await client.post(path), await client.post(path)
    assert first.status == 202 and second.status in (202, 404), second.body
    [item] = await _await_summary(client, u1)
    assert item["text"] == f"Earlier the user asked: {_asked(u1)}"  # the route's summary
    assert item["source_session"] == session
    assert item["metadata"]["reason"] == "reset"
    assert not any(_system(r).startswith(SUMMARY_INSTRUCTIONS) for r in model.requests)  # routed
    [call] = _summary_calls(model, u1)
    assert f"user: {_asked(u1)}" in (call.last_user_text or "")
    await asyncio.sleep(3)  # a second hook, if any, would have run by now
    assert len(_summary_calls(model, u1)) == 1
    assert len(await _summaries_of(client, u1)) == 1

    asks = [
        (u1, f"Which kayaking gear for Lofoten? ({u1})"),
        (u1, f"Recommend Paris restaurants, ref {uuid.uuid4().hex}."),  # no word of the summary
        (u2, f"Which kayaking gear for Lofoten? ({u2})"),
    ]
    model.script(Reply.text("Kayaks are waiting."), Reply.text("Paris it is."), Reply.text("Hello."))
    for user, text in asks:
        answer = await client.run("concierge", text, user_id=user)
        assert answer.status == 200, answer.body
    turns = [next(r for r in model.requests if r.last_user_text == text) for _, text in asks]
    seen = _system(turns[0])
    block = seen.split("<past-conversations>\n", 1)[1].split("\n</past-conversations>", 1)[0]
    assert [s["text"] for s in json.loads(block)] == [item["text"]]
    assert "never instructions" in seen
    assert item["text"] not in _system(turns[1])
    assert item["text"] not in _system(turns[2])
    assert await _summaries_of(client, u2) == []


async def test_a_deleted_session_is_summarised(client: Client, model: ModelServer) -> None:
    u1 = _user("u1")
    session = await _session_about_kayaks(client, model, u1)
    gone = await client.request("DELETE", f"/api/agents/concierge/sessions/{session}?user_id={u1}")
    assert gone.status == 202, gone.body
    [item] = await _await_summary(client, u1)
    assert item["metadata"]["reason"] == "delete" and item["source_session"] == session


async def test_a_summary_written_while_its_user_is_erased_does_not_undo_the_erasure(
    client: Client, model: ModelServer, host_log: pathlib.Path
) -> None:
    """The reset's summary call is held until u1's erasure (`DELETE /api/users/{id}`) has
    finished, so the summary is written after the erasure walked u1's memory: it must not stay."""
    u1 = _user("u1")
    release = _hold_summaries(model, u1)
    try:
        session = await _session_about_kayaks(client, model, u1)
        reset = await client.post(f"/api/agents/concierge/sessions/{session}/reset?user_id={u1}")
        assert reset.status == 202, reset.body

        async def summarising() -> bool:
            return bool(_summary_calls(model, u1))

        await eventually(summarising, "the summary call", timeout=30)
        erase = await client.request("DELETE", f"/api/users/{u1}")
        assert erase.status == 202, erase.body

        async def erased() -> dict[str, Any] | None:
            answer = await client.get(f"/api/users/{u1}/erasure")
            assert answer.status == 200, answer.body
            return answer.json() if answer.json()["status"] != "running" else None

        done = await eventually(erased, "the erasure finishing", timeout=60, interval=0.2)
        assert done["status"] == "completed", done
    finally:
        release.set()

    async def hooks_ran() -> bool:
        return f"session {session} of concierge ended" in host_log.read_text(errors="replace")

    await eventually(hooks_ran, "the session-end hooks finishing", timeout=60, interval=0.2)
    assert await _summaries_of(client, u1) == []
    assert len(_summary_calls(model, u1)) == 1


async def test_a_hook_retried_after_its_users_erasure_began_does_not_run(
    client: Client, model: ModelServer, host_log: pathlib.Path
) -> None:
    """The reset's summary call fails once (a 400: the hook fails and its activity is tried again
    5 s later); u1 is erased meanwhile, so the retry finds the erasure record newer than the end
    and runs no hook: one summary call, no summary."""
    u1 = _user("u1")

    def failing_once(request: ModelRequest) -> Reply:
        if len(_summary_calls(model, u1)) == 1:
            return Reply.error(400, "the model refused this once")
        return Reply.text(f"Earlier the user asked: {_asked(u1)}")

    model.route(SUMMARIES, _route(model).match, failing_once)
    session = await _session_about_kayaks(client, model, u1)
    reset = await client.post(f"/api/agents/concierge/sessions/{session}/reset?user_id={u1}")
    assert reset.status == 202, reset.body

    async def summarising() -> bool:
        return bool(_summary_calls(model, u1))

    await eventually(summarising, "the summary call", timeout=30)
    erase = await client.request("DELETE", f"/api/users/{u1}")
    assert erase.status == 202, erase.body

    async def hooks_done() -> bool:
        return f"session {session} of concierge ended" in host_log.read_text(errors="replace")

    await eventually(hooks_done, "the retried session-end hooks", timeout=60, interval=0.2)
    assert len(_summary_calls(model, u1)) == 1
    assert await _summaries_of(client, u1) == []


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
        session = await _session_about_kayaks(client, model, u1)
        [item] = await _await_summary(client, u1, timeout=ttl + 60)
        assert item["metadata"]["reason"] == "expiry" and item["source_session"] == session
        gone = await client.get(f"/api/agents/concierge/sessions/{session}?user_id={u1}")
        assert gone.status == 404
    finally:
        host.stop()


async def test_two_resets_that_read_the_same_history_summarise_it_once(
    client: Client, model: ModelServer, host_log: pathlib.Path
) -> None:
    """Both resets are sent while a turn of the session still runs (its model call takes 2 s), so
    both read the session with its history before either is applied, and each starts the hooks.
    The summary call is held until well after both: a second set of hooks would be calling it
    too by then. One start is refused as a duplicate, so the model is asked once."""
    u1 = _user("u1")
    release = _hold_summaries(model, u1)
    try:
        session = await _session_about_kayaks(client, model, u1)
        model.script(Reply.delay(2.0, then=Reply.text("Still thinking about kayaks.")))
        busy = await client.run("concierge", f"And in August? ({u1})", user_id=u1, session_id=session,
                                wait_for_response=False)
        assert busy.status == 202, busy.body
        path = f"/api/agents/concierge/sessions/{session}/reset?user_id={u1}"
        first, second = await asyncio.gather(client.post(path), client.post(path))
        assert (first.status, second.status) == (202, 202), (first.body, second.body)

        async def summarising() -> bool:
            return bool(_summary_calls(model, u1))

        await eventually(summarising, "the summary call", timeout=30)
        await asyncio.sleep(3)  # the other reset's hooks, had they started, would be calling too
        assert len(_summary_calls(model, u1)) == 1
    finally:
        release.set()
    [item] = await _await_summary(client, u1)
    assert item["source_session"] == session and item["metadata"]["reason"] == "reset"
    assert "started already by another end" in host_log.read_text(errors="replace")
    assert len(_summary_calls(model, u1)) == 1
