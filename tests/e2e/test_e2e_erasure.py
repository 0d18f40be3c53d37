"""Erasing a user over real HTTP, on the real local host with the scripted model: afterwards
nothing of theirs is left in any store (entity states, archive files, stream store, memory) while
another user's data is untouched, the receipt counts what there was, a host killed with `kill -9`
in the middle of an erasure finishes it after a restart, and hostile input changes nothing."""

from __future__ import annotations

import asyncio
import json
import pathlib
import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest
from e2e_support import Client, HostProcess, eventually
from erasure_support import (
    PRINCIPAL,
    archived_files,
    erase,
    erasure_env,
    long_session,
    memory_rows,
    receipt,
    remember,
    session_rows,
    stored_sessions,
    stream_rows,
    turn,
)

from agents.testing import ModelRequest, ModelServer, Reply

WEBHOOKS = "/runtime/webhooks/durabletask"
"""The Durable extension's HTTP API, which the host serves as Azure does."""


def _user(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def host(model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostProcess]:
    root = tmp_path_factory.mktemp("erasure-host")
    env = erasure_env(root / "data")
    host = HostProcess(root / "data", model_server.base_url, root / "host.log", extra_env=env)
    host.start()
    try:
        yield host
    finally:
        host.stop()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    # Not pooled: connections to a killed host must not be reused for the restarted one.
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30)) as session:
        yield session


async def _export(client: Client, user: str) -> list[dict[str, Any]]:
    answer = await client.get(f"/api/users/{user}/export", headers={PRINCIPAL: user})
    assert answer.status == 200, answer.body[:500]
    return [json.loads(line) for line in answer.body.split(b"\n")[:-1]]


def _sessions(lines: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((line["agent"], line["session_id"]) for line in lines if line["kind"] == "session")


async def _everything(host: HostProcess, user: str, sessions: list[tuple[str, str]]) -> dict[str, Any]:
    """What every store holds of `user` (whose sessions are `sessions`)."""
    return {
        "entity_states": stored_sessions(host, user),
        "archive_files": await archived_files(host, sessions),
        "streams": stream_rows(host, sessions),
        "memory_rows": memory_rows(host, user),
    }


async def test_erasing_a_user_leaves_nothing_of_theirs_and_spares_the_other(
    host: HostProcess, http: aiohttp.ClientSession, model: ModelServer
) -> None:
    client = Client(http, host.url)
    u1, u2 = _user("u1"), _user("u2")
    await remember(client, model, u1, "u1 likes aisle seats.", "u1 is vegetarian.")
    await long_session(client, model, u1)
    model.script(Reply.text("Tea."), Reply.text("More tea."))
    tea = await turn(client, u1, "assistant", "I like tea.")
    await turn(client, u1, "assistant", "And more.", tea)
    await remember(client, model, u2, "u2 likes trains.")
    model.script(Reply.text("Coffee."))
    await turn(client, u2, "assistant", "I like coffee.")

    mine, theirs = await _export(client, u1), await _export(client, u2)
    sessions, other = _sessions(mine), _sessions(theirs)
    before = await _everything(host, u1, sessions)
    assert len(sessions) == 3 and before["archive_files"] > 0 and before["streams"]["events"] > 0, before
    assert len(before["entity_states"]) == 3 and before["memory_rows"] == 2, before
    other_before = await _everything(host, u2, other)

    done = await receipt(client, await erase(client, u1), u1)
    assert done["status"] == "completed", done
    assert done["memories"] == 2
    assert done["sessions"] == {"assistant": 2, "concierge": 1, "writer": 0, "reviewer": 0} or (
        {k: v for k, v in done["sessions"].items() if v} == {"assistant": 2, "concierge": 1}
    ), done
    assert done["archived_chunks"] == before["archive_files"]
    assert done["stream_events"] == before["streams"]["events"]
    assert done["started_at"] <= done["finished_at"]

    # Nothing of u1 is left anywhere: no entity state (not even a tombstone naming them), no
    # archive file, no stream row, no memory row; the routes agree.
    assert await _everything(host, u1, sessions) == {
        "entity_states": [], "archive_files": 0, "streams": {"events": 0, "streams": 0, "claims": 0},
        "memory_rows": 0,
    }
    empty = await _export(client, u1)
    assert [line["kind"] for line in empty] == ["user", "end"]
    listed = await client.get(f"/api/users/{u1}/memories", headers={PRINCIPAL: u1})
    assert listed.json()["items"] == []
    for agent, session in sessions:
        gone = await client.get(f"/api/agents/{agent}/sessions/{session}", headers={PRINCIPAL: u1})
        assert gone.status == 404, (agent, session, gone.body[:300])
    # u2 is untouched.
    assert await _everything(host, u2, other) == other_before
    after = await _export(client, u2)
    strip = lambda lines: [line for line in lines if line["kind"] != "user"]  # noqa: E731
    assert strip(after) == strip(theirs)
    # The receipt stays readable.
    again = await client.get(f"/api/users/{u1}/erasure", headers={PRINCIPAL: u1})
    assert again.status == 200 and again.json() == done


async def test_hostile_input_and_a_user_with_nothing(
    host: HostProcess, http: aiohttp.ClientSession, model: ModelServer
) -> None:
    client = Client(http, host.url)
    ada, bob = _user("ada"), _user("bob")
    await remember(client, model, ada, "ada flies from Oslo.")
    cases: list[tuple[str, str, dict[str, str], int, str]] = [
        ("DELETE", f"/api/users/{quote('a@b')}", {PRINCIPAL: ada}, 400, "invalid_user_id"),
        ("DELETE", f"/api/users/{'a' * 129}", {PRINCIPAL: ada}, 400, "invalid_user_id"),
        ("GET", f"/api/users/{quote('a b')}/erasure", {PRINCIPAL: ada}, 400, "invalid_user_id"),
        ("DELETE", f"/api/users/{ada}", {PRINCIPAL: bob}, 403, "user_mismatch"),
        ("GET", f"/api/users/{ada}/erasure", {PRINCIPAL: bob}, 403, "user_mismatch"),
        ("DELETE", f"/api/users/{ada}", {}, 403, "user_mismatch"),
        ("DELETE", f"/api/me?user_id={ada}", {PRINCIPAL: bob}, 403, "user_mismatch"),
        ("DELETE", "/api/me", {}, 401, "not_signed_in"),
        # A principal id that is not a valid id is stored under a digest: its raw id names no one.
        ("DELETE", f"/api/users/{quote('a b')}", {PRINCIPAL: "a b"}, 400, "invalid_user_id"),
        ("GET", f"/api/users/{ada}/erasure", {PRINCIPAL: ada}, 404, "erasure_not_found"),
    ]
    for method, path, headers, status, code in cases:
        answer = await client.request(method, path, headers=headers)
        assert answer.status == status, (method, path, answer.status, answer.body[:300])
        assert answer.content_type == "application/problem+json" and answer.json()["code"] == code
    assert (await client.request("DELETE", f"/api/users/{ada}", key=False)).status == 401
    # Nothing changed: ada's memory is there, no erasure was started.
    listed = await client.get(f"/api/users/{ada}/memories", headers={PRINCIPAL: ada})
    assert [i["text"] for i in listed.json()["items"]] == ["ada flies from Oslo."]

    # A user with nothing: 202 and a receipt of zeros; `me` serves the signed-in user.
    nobody = _user("nobody")
    answer = await client.request("DELETE", "/api/me", headers={PRINCIPAL: nobody})
    assert answer.status == 202 and answer.headers["location"].endswith("/api/me/erasure"), answer.body
    done = await receipt(client, answer.headers["location"], nobody)
    assert done["status"] == "completed" and done["user_id"] == nobody
    assert (done["memories"], done["archived_chunks"], done["stream_events"]) == (0, 0, 0)
    assert set(done["sessions"].values()) == {0}
    listed = await client.get(f"/api/users/{ada}/memories", headers={PRINCIPAL: ada})
    assert len(listed.json()["items"]) == 1


async def test_kill_9_in_the_middle_of_an_erasure_then_restart_finishes_it(
    tmp_path: pathlib.Path, model: ModelServer, http: aiohttp.ClientSession
) -> None:
    data = tmp_path / "data"
    host = HostProcess(data, model.base_url, tmp_path / "host.log", extra_env=erasure_env(data)).start()
    u1, u2 = _user("u1"), _user("u2")
    model.handler = lambda request: Reply.text(f"answer to {request.last_user_text}")
    try:
        client = Client(http, host.url)
        for n in range(60):
            await turn(client, u1, "assistant", f"message {n}")
        await turn(client, u2, "assistant", "spare me")
        model.handler = None
        await remember(client, model, u1, "u1 likes aisle seats.")
        sessions = _sessions(await _export(client, u1))
        before = await _everything(host, u1, sessions)
        assert len(sessions) == 61 and before["streams"]["events"] > 0
        location = await erase(client, u1)
        path = location[location.index("/api/"):]
        # A second request while it runs attaches to it (had it started anew, the new erasure's
        # inventory would miss what the first had deleted, and the receipt would count less).
        second = await client.request("DELETE", "/api/me", headers={PRINCIPAL: u1})
        assert second.status == 202 and second.json()["status"] == "running", second.body

        async def mid_way() -> bool:
            body = (await client.get(path, headers={PRINCIPAL: u1})).json()
            assert body["status"] == "running", body  # killed before it could finish
            return sum(body["sessions"].values()) > 0

        await eventually(mid_way, "the erasure deleting its first sessions", interval=0.02)
        host.kill()
    finally:
        host.kill()
    assert host.proc is not None and host.proc.returncode == -9
    left = stored_sessions(host, u1)
    assert 0 < len(left) < 61  # stopped mid-way

    host.start()
    try:
        client = Client(http, host.url)
        done = await receipt(client, location, u1, timeout=120)
        assert done["status"] == "completed", (done, host.log()[-3000:])
        assert done["sessions"]["assistant"] == 60 and done["sessions"]["concierge"] == 1
        assert done["memories"] == 1 and done["stream_events"] == before["streams"]["events"]
        assert await _everything(host, u1, sessions) == {
            "entity_states": [], "archive_files": 0, "streams": {"events": 0, "streams": 0, "claims": 0},
            "memory_rows": 0,
        }
        assert len(_sessions(await _export(client, u2))) == 1
    finally:
        host.stop()


def assert_only_a_tombstone(host: HostProcess, session: str, user: str) -> bool:
    """The erased session's rows: none, or the erasure's tombstone (never a `null` state, nothing
    naming the user)."""
    rows = session_rows(host, "concierge", session)
    assert len(rows) <= 1, rows
    for (state,) in rows:
        assert state is not None and user not in state, state
        document = json.loads(state)
        if isinstance(document, str):  # the entity's state as its text
            document = json.loads(document)
        assert document["data"].get("deletedAt") and not document["data"].get("conversationHistory"), state
    return True


async def test_erasing_a_user_whose_run_awaits_approval_leaves_no_session_behind(
    tmp_path: pathlib.Path, model: ModelServer, http: aiohttp.ClientSession
) -> None:
    """The adversarial steps: a user's run waits for a decision (its expiry has started), the
    user is erased, then the approval's expiry comes due. The session must stay gone: no entity
    (not even one whose state is `null`) but the erasure's tombstone, which names no one; not in
    the sessions list, a 404 to read."""
    data = tmp_path / "data"
    env = {**erasure_env(data), "DURABLE_AGENTS_APPROVAL_TIMEOUT_SECONDS": "4"}
    host = HostProcess(data, model.base_url, tmp_path / "host.log", extra_env=env).start()
    user = _user("waiting")
    model.script(Reply.tool_call("book_hotel", {"city": "Oslo", "nights": 1}, call_id="call-1"))
    try:
        client = Client(http, host.url)
        body = {"message": "book Oslo", "session_id": "paused-" + uuid.uuid4().hex[:8]}
        answer = await client.post("/api/agents/concierge/run", json_body=body, headers={PRINCIPAL: user})
        # The waiting POST saw the pause: it started the approval's expiry.
        assert answer.status == 202 and answer.json()["status"] == "awaiting_approval", answer.body[:500]
        session = body["session_id"]
        done = await receipt(client, await erase(client, user), user)
        assert done["status"] == "completed" and done["sessions"]["concierge"] == 1, done
        assert_only_a_tombstone(host, session, user)
        # The erasure stopped the approval's expiry, which would have signalled the session.
        run = answer.json()["correlation_id"]
        expiry = await client.get(f"{WEBHOOKS}/instances/dafx-approval-concierge-{session}-1-{run}")
        assert expiry.json()["runtimeStatus"] == "Terminated", expiry.body[:300]
        # Past the approval's due time, with time for its expiry to run.
        await asyncio.sleep(7)
        assert_only_a_tombstone(host, session, user), host.log()[-3000:]
        read = await client.get(f"/api/agents/concierge/sessions/{session}", headers={PRINCIPAL: user})
        assert read.status == 404, read.body[:300]
        listed = await client.get("/api/agents/concierge/sessions", headers={PRINCIPAL: user})
        assert listed.status == 200 and session not in json.dumps(listed.json()), listed.body[:500]
        # A signal that still reaches the deleted session (one sent before its sender was
        # stopped) creates nothing either.
        signals = {
            "expire_approvals": {"correlationId": run, "step": 1, "seconds": 4},
            "run_status": {"correlationId": run},
        }
        for op, value in signals.items():
            sent = await client.post(f"{WEBHOOKS}/entities/dafx-concierge/{session}?op={op}", json_body=value)
            assert sent.status == 202, sent.body[:300]

        async def both_ran() -> bool:
            return f"key={session} op=run_status correlation=" in host.log()

        await eventually(both_ran, "the signals to the deleted session running")
        assert_only_a_tombstone(host, session, user)
    finally:
        host.stop()


async def _erased_steered_session(
    client: Client, host: HostProcess, model: ModelServer, archived: bool = False
) -> str:
    """A session of a new user's with a turn and a steer run joined into it (`archived`: then
    enough turns after it that it went to the archive), then the user erased."""
    user = _user("steerer")
    session = "erased-" + uuid.uuid4().hex[:8]

    async def handler(request: ModelRequest) -> Reply:
        if request.last_user_text == "slow":
            await asyncio.sleep(1.5)
            return Reply.tool_call("get_weather", {"city": "Paris"})
        return Reply.text("done")

    model.handler = handler
    run = "/api/agents/concierge/run"
    first = {
        "message": "slow", "session_id": session, "correlation_id": "slow-run", "wait_for_response": False
    }
    assert (await client.post(run, json_body=first, headers={PRINCIPAL: user})).status == 202

    async def at_model() -> bool:
        return bool(model.requests)

    await eventually(at_model, "the turn's first model call")
    steer = {
        "message": "and Lyon", "session_id": session, "correlation_id": "steer-run",
        "multitask_strategy": "steer",
    }
    steered = await client.post(run, json_body=steer, headers={PRINCIPAL: user})
    assert steered.status == 200 and steered.json()["correlation_id"] == "slow-run", steered.body[:300]
    assert stream_rows(host, [("concierge", session)])["claims"] >= 2  # the run's and the steer's
    if archived:
        for i in range(6):
            later = {"message": f"later {i} " + "y" * 1500, "session_id": session}
            assert (await client.post(run, json_body=later, headers={PRINCIPAL: user})).status == 200
        query = "SELECT state FROM entity_states WHERE key = ? AND state IS NOT NULL"
        with sqlite3.connect(host.data_dir / "devhost.db") as db:
            (state,) = db.execute(query, (session,)).fetchone()
        assert "steer-run" not in state  # its mark is on an archived message only
    done = await receipt(client, await erase(client, user), user)
    assert done["status"] == "completed", done
    assert stored_sessions(host, user) == []  # not even a tombstone names them
    return session


async def test_an_erasure_leaves_no_claim_of_a_steer_run(
    host: HostProcess, http: aiohttp.ClientSession, model: ModelServer
) -> None:
    client = Client(http, host.url)
    session = await _erased_steered_session(client, host, model)
    # The steer run's claim named the user; its id lived only on the messages it added.
    assert stream_rows(host, [("concierge", session)]) == {"events": 0, "streams": 0, "claims": 0}


async def test_an_erasure_leaves_no_claim_of_an_archived_steer_run(
    host: HostProcess, http: aiohttp.ClientSession, model: ModelServer
) -> None:
    client = Client(http, host.url)
    session = await _erased_steered_session(client, host, model, archived=True)
    assert stream_rows(host, [("concierge", session)]) == {"events": 0, "streams": 0, "claims": 0}


async def test_an_erased_sessions_runs_answer_410_at_once(
    host: HostProcess, http: aiohttp.ClientSession, model: ModelServer
) -> None:
    client = Client(http, host.url)
    session = await _erased_steered_session(client, host, model)
    for cid in ("slow-run", "steer-run"):
        status = await client.get(f"/api/agents/concierge/sessions/{session}/runs/{cid}?wait=5")
        assert status.status == 410 and status.json()["code"] == "run_discarded", (cid, status.body[:300])
        assert status.elapsed < 2, status.elapsed
    gone = await client.get(f"/api/agents/concierge/sessions/{session}")
    assert gone.status == 404 and gone.json()["code"] == "session_not_found"
