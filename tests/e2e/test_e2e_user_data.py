"""A user's memory and export over real HTTP, on the real local host with the scripted model:
what the concierge remembers for u1 is listed for u1 alone, a deleted item is gone from u1's next
turn, the export streams u1's memory and sessions (with archived history) and nothing of u2's,
behind App Service Authentication `me/` serves the signed-in user, and hostile input is a
problem that changes nothing."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from e2e_support import Answer, Client, HostProcess, history

from agents.testing import ModelRequest, ModelServer, Reply
from hosting.archive import epoch_prefix, store_from_env

PRINCIPAL = "X-MS-CLIENT-PRINCIPAL-ID"
FACTS = (
    "The traveller prefers aisle seats.",
    "The traveller is vegetarian.",
    "The traveller flies from Oslo.",
)


def _user(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"  # the shared host's memory outlives one test


def _system(request: ModelRequest) -> str:
    return "\n".join(m.text for m in request.messages if m.role in ("system", "developer"))


def _lines(answer: Answer) -> list[dict[str, Any]]:
    assert answer.status == 200, answer.body[:500]
    assert answer.content_type == "application/x-ndjson"
    assert answer.body.endswith(b"\n")
    return [json.loads(line) for line in answer.body.split(b"\n")[:-1]]


async def _remember(client: Client, model: ModelServer, user: str, *facts: str, **headers: str) -> str:
    """A concierge turn of `user` that remembers `facts`; its session id."""
    model.script(Reply.tool_calls([("remember", {"fact": f}) for f in facts]), Reply.text("Noted."))
    body: dict[str, Any] = {"message": "Please remember this."}
    if not headers:
        body["user_id"] = user
    answer = await client.post("/api/agents/concierge/run", json_body=body, headers=headers or None)
    assert answer.status == 200, answer.body
    return str(answer.json()["session_id"])


async def _listing(client: Client, path: str, **headers: str) -> list[dict[str, Any]]:
    """Every item of a memory listing, following its `next` links."""
    items: list[dict[str, Any]] = []
    url: str | None = path
    while url is not None:
        answer = await client.get(url, headers=headers or None)
        assert answer.status == 200, answer.body
        page = answer.json()
        items += page["items"]
        url = page["next"]
        assert (url is None) == (page["cursor"] is None)
    return items


async def test_memories_are_listed_for_their_user_alone_and_deleting_one_forgets_it(
    client: Client, model: ModelServer
) -> None:
    u1, u2 = _user("u1"), _user("u2")
    session = await _remember(client, model, u1, *FACTS)
    listed = await _listing(client, f"/api/users/{u1}/memories?limit=2")
    assert sorted(i["text"] for i in listed) == sorted(FACTS) and len({i["id"] for i in listed}) == 3
    stamps = [i["created_at"] for i in listed]
    assert stamps == sorted(stamps, reverse=True)  # newest first, across the pages
    item = next(i for i in listed if i["text"] == FACTS[0])
    assert item["agent"] is None and item["metadata"]["agent"] == "concierge"
    assert set(item) == {"id", "text", "agent", "metadata", "source_session", "created_at", "updated_at"}
    assert await _listing(client, f"/api/users/{u2}/memories") == []
    found = await _listing(client, f"/api/users/{u1}/memories?q=AISLE%20seats")
    assert [i["id"] for i in found] == [item["id"]]
    assert await _listing(client, f"/api/users/{u1}/memories?q=zebra") == []

    # u2 cannot reach u1's item: answered exactly as an id never used.
    theirs = await client.request("DELETE", f"/api/users/{u2}/memories/{item['id']}")
    unknown = await client.request("DELETE", f"/api/users/{u2}/memories/{'0' * 32}")
    for answer in (theirs, unknown):
        assert answer.status == 404 and answer.content_type == "application/problem+json"
    strip = {"detail", "instance"}
    assert {k: v for k, v in theirs.json().items() if k not in strip} == {
        k: v for k, v in unknown.json().items() if k not in strip
    }
    assert theirs.json()["code"] == "memory_not_found"
    assert len(await _listing(client, f"/api/users/{u1}/memories")) == 3  # nothing changed

    gone = await client.request("DELETE", f"/api/users/{u1}/memories/{item['id']}")
    assert gone.status == 204 and gone.body == b""
    again = await client.request("DELETE", f"/api/users/{u1}/memories/{item['id']}")
    assert again.status == 404 and again.json()["code"] == "memory_not_found"
    assert FACTS[0] not in {i["text"] for i in await _listing(client, f"/api/users/{u1}/memories")}
    # u1's next turn, in the same session and in a new one: the model no longer sees it.
    model.script(Reply.text("Window or aisle?"), Reply.text("Hello."))
    same = await client.run("concierge", "Book me a seat.", session, user_id=u1)
    fresh = await client.run("concierge", "Book me a seat.", user_id=u1)
    assert same.status == 200 and fresh.status == 200, (same.body, fresh.body)
    for request in model.requests[-2:]:
        seen = _system(request)
        assert FACTS[1] in seen and "aisle" not in seen


async def test_the_export_streams_the_users_memory_and_sessions_and_none_of_anyone_elses(
    client: Client, model: ModelServer
) -> None:
    u1, u2 = _user("u1"), _user("u2")
    concierge = await _remember(client, model, u1, FACTS[0])
    model.script(Reply.text("Tea it is."), Reply.text("Other user."), Reply.text("Nobody's."))
    own = await client.run("assistant", "I like tea.", user_id=u1)
    other = await client.run("assistant", "I am u2.", user_id=u2)
    nobody = await client.run("assistant", "I am no one.")
    assert own.status == other.status == nobody.status == 200
    trains = await _remember(client, model, u2, "u2 likes trains.")

    lines = _lines(await client.get(f"/api/users/{u1}/export"))
    assert lines[0]["kind"] == "user" and lines[0]["user_id"] == u1
    assert lines[-1] == {
        "kind": "end", "memories": 1, "sessions": 2, "archived_entries": 0, "errors": 0, "complete": True
    }
    memories = [line for line in lines if line["kind"] == "memory"]
    assert [m["text"] for m in memories] == [FACTS[0]] and "embedding" not in memories[0]
    sessions = {(s["agent"], s["session_id"]): s for s in lines if s["kind"] == "session"}
    assert set(sessions) == {("concierge", concierge), ("assistant", own.json()["session_id"])}
    assert all(s["state"]["data"]["userId"] == u1 for s in sessions.values())
    text = json.dumps(lines)
    assert "u2 likes trains" not in text and "I am u2" not in text and "I am no one" not in text
    # u2's export holds u2's alone; a user with nothing gets the frame only.
    theirs = _lines(await client.get(f"/api/users/{u2}/export"))
    assert {(s["agent"], s["session_id"]) for s in theirs if s["kind"] == "session"} == {
        ("assistant", other.json()["session_id"]),
        ("concierge", trains),
    }
    assert "I like tea" not in json.dumps(theirs)
    empty = _lines(await client.get(f"/api/users/{_user('nobody')}/export"))
    assert [line["kind"] for line in empty] == ["user", "end"]


async def test_hostile_input_is_a_problem_that_changes_nothing(client: Client, model: ModelServer) -> None:
    u1 = _user("u1")
    await _remember(client, model, u1, FACTS[0])
    before = await _listing(client, f"/api/users/{u1}/memories")
    item = before[0]["id"]
    cases: list[tuple[str, str, int, str, str]] = [
        ("GET", f"/api/users/{quote('a@b')}/memories", 400, "invalid_user_id", "user_id"),
        ("GET", f"/api/users/{'a' * 129}/export", 400, "invalid_user_id", "user_id"),
        ("DELETE", f"/api/users/{quote('a b')}/memories/{item}", 400, "invalid_user_id", "user_id"),
        ("DELETE", f"/api/users/{u1}/memories/{quote('x@y')}", 400, "invalid_field", "memory_id"),
        ("DELETE", f"/api/users/{u1}/memories/{'m' * 129}", 400, "invalid_field", "memory_id"),
        ("GET", f"/api/users/{u1}/memories?limit=0", 400, "invalid_field", "limit"),
        ("GET", f"/api/users/{u1}/memories?limit=101", 400, "invalid_field", "limit"),
        ("GET", f"/api/users/{u1}/memories?limit=%EF%BC%91", 400, "invalid_field", "limit"),  # fullwidth 1
        ("GET", f"/api/users/{u1}/memories?cursor=bm90LWEtY3Vyc29y", 400, "invalid_field", "cursor"),
        ("GET", f"/api/users/{u1}/memories?cursor={'A' * 600}", 400, "invalid_field", "cursor"),
        ("GET", f"/api/users/{u1}/memories?q={'x' * 257}", 400, "invalid_field", "q"),
        ("GET", f"/api/users/{u1}/memories?user_id=u2", 400, "conflicting_fields", "user_id"),
        ("DELETE", f"/api/users/{u1}/memories/{item}?user_id=u2", 400, "conflicting_fields", "user_id"),
        ("GET", "/api/me/memories", 400, "missing_field", "user_id"),  # no Easy Auth: name the user
        ("DELETE", f"/api/me/memories/{item}", 400, "missing_field", "user_id"),
        ("GET", "/api/me/export?user_id=a%2Fb", 400, "invalid_user_id", "user_id"),
    ]
    for method, path, status, code, field in cases:
        answer = await client.request(method, path)
        assert answer.status == status, (method, path, answer.status, answer.body[:300])
        assert answer.content_type == "application/problem+json", (method, path)
        problem = answer.json()
        assert (problem["code"], problem.get("field")) == (code, field), (method, path, problem)
        assert problem["detail"]
    # Without a function key the routes are closed (admin-level, as the agent routes).
    assert (await client.request("GET", f"/api/users/{u1}/memories", key=False)).status == 401
    assert await _listing(client, f"/api/users/{u1}/memories") == before
    mine = await _listing(client, f"/api/me/memories?user_id={u1}")  # a function key names the user
    assert mine == before


@pytest.fixture(scope="module")
def auth_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """App Service Authentication on (the tests send the principal header as the platform would),
    history archived above 4 KiB into files the test can reach, so an export meets chunks."""
    return {
        "WEBSITE_AUTH_ENABLED": "True",
        "DURABLE_AGENTS_ARCHIVE_AT_BYTES": "4096",
        "DURABLE_AGENTS_ARCHIVE_KEEP_BYTES": "1024",
        "DURABLE_AGENTS_HISTORY_STORE": "files",
        "DURABLE_AGENTS_HISTORY_DIR": str(tmp_path_factory.mktemp("auth-history")),
    }


@pytest.fixture(scope="module")
def auth_host(
    model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory, auth_env: dict[str, str]
) -> Iterator[HostProcess]:
    root = tmp_path_factory.mktemp("auth-data-host")
    env = auth_env
    host = HostProcess(root / "data", model_server.base_url, root / "host.log", extra_env=env).start()
    try:
        yield host
    finally:
        host.stop()


async def _long_session(client: Client, model: ModelServer, principal: str) -> str:
    """A session of `principal` with four turns of about 3 KiB: older entries get archived."""
    session = "long-" + uuid.uuid4().hex[:10]
    model.script(*(Reply.text(f"answer {n} " + "z" * 1500) for n in range(4)))
    for n in range(4):
        turn = await client.post(
            "/api/agents/assistant/run",
            json_body={"message": f"turn {n} " + "y" * 1500, "session_id": session},
            headers={PRINCIPAL: principal},
        )
        assert turn.status == 200, turn.body
    return session


async def test_behind_easy_auth_me_serves_the_signed_in_user_alone(
    auth_host: HostProcess, client: Client, model: ModelServer
) -> None:
    behind = Client(client.session, auth_host.url)
    ada, bob = _user("ada"), _user("bob")
    await _remember(behind, model, ada, FACTS[0], **{PRINCIPAL: ada})
    mine = await _listing(behind, "/api/me/memories", **{PRINCIPAL: ada})
    assert [i["text"] for i in mine] == [FACTS[0]]
    assert await _listing(behind, "/api/me/memories", **{PRINCIPAL: bob}) == []
    assert await _listing(behind, f"/api/users/{ada}/memories", **{PRINCIPAL: ada}) == mine
    for path in (f"/api/users/{ada}/memories", f"/api/users/{ada}/export", f"/api/me/memories?user_id={ada}"):
        forged = await behind.get(path, headers={PRINCIPAL: bob})
        assert forged.status == 403 and forged.json()["code"] == "user_mismatch", (path, forged.body)
    forged_delete = await behind.request(
        "DELETE", f"/api/users/{ada}/memories/{mine[0]['id']}", headers={PRINCIPAL: bob}
    )
    assert forged_delete.status == 403 and forged_delete.json()["code"] == "user_mismatch"
    anonymous = await behind.get("/api/me/memories")
    assert anonymous.status == 401 and anonymous.json()["code"] == "not_signed_in"
    # A principal id that is not a valid id is someone too: stored under a digest, named as given.
    spaced = await behind.get("/api/me/export", headers={PRINCIPAL: "a b"})
    assert spaced.status == 200, spaced.body
    first = json.loads(spaced.body.splitlines()[0])
    assert first["user_id"].startswith("~") and first["principal"] == {"provider": "", "id": "a b"}
    stolen = await behind.request("DELETE", f"/api/me/memories/{mine[0]['id']}", headers={PRINCIPAL: bob})
    assert stolen.status == 404 and stolen.json()["code"] == "memory_not_found"
    assert await _listing(behind, "/api/me/memories", **{PRINCIPAL: ada}) == mine

    # A long session of ada's: its older entries go to the archive, and the export streams them.
    session = await _long_session(behind, model, ada)
    lines = _lines(await behind.get("/api/me/export", headers={PRINCIPAL: ada}))
    end = lines[-1]
    assert end["kind"] == "end" and end["complete"] and end["archived_entries"] > 0, end
    stored = next(s for s in lines if s["kind"] == "session" and s["session_id"] == session)
    archived = [e for e in lines if e["kind"] == "archived_entry" and e["session_id"] == session]
    assert [e["index"] for e in archived] == list(range(len(archived)))  # oldest first, none missing
    assert stored["state"]["data"]["archive"]["archivedEntries"] == len(archived)
    whole = [e["entry"] for e in archived] + history(stored["state"])
    assert len(whole) == 8 and "turn 0 " in json.dumps(whole[0])
    assert _lines(await behind.get("/api/me/export", headers={PRINCIPAL: bob}))[-1]["sessions"] == 0

    gone = await behind.request("DELETE", f"/api/me/memories/{mine[0]['id']}", headers={PRINCIPAL: ada})
    assert gone.status == 204
    assert await _listing(behind, "/api/me/memories", **{PRINCIPAL: ada}) == []


async def test_a_missing_archived_chunk_is_an_error_line_and_the_export_goes_on(
    auth_host: HostProcess, auth_env: dict[str, str], client: Client, model: ModelServer
) -> None:
    behind = Client(client.session, auth_host.url)
    ada = _user("ada")
    broken = await _long_session(behind, model, ada)
    intact = await _long_session(behind, model, ada)
    # Read without touching the chunks (the app caches the chunks it read).
    read = await behind.get(f"/api/agents/assistant/sessions/{broken}", headers={PRINCIPAL: ada})
    archive = read.json()["state"]["data"]["archive"]
    store = store_from_env(auth_env)
    try:
        paths = sorted(await store.list_paths(epoch_prefix("dafx-assistant", broken, archive["epoch"])))
        oldest = paths[0]
        kept = await store.get(oldest)
        assert kept is not None
        await store.delete(oldest)
        lines = _lines(await behind.get("/api/me/export", headers={PRINCIPAL: ada}))
        errors = [line for line in lines if line["kind"] == "error"]
        assert len(errors) == 1 and errors[0]["code"] == "history_unavailable", errors
        assert errors[0]["session_id"] == broken and oldest.endswith(errors[0]["chunk"])
        assert lines[-1]["kind"] == "end" and lines[-1]["errors"] == 1 and not lines[-1]["complete"]
        sessions = {line["session_id"] for line in lines if line["kind"] == "session"}
        assert {broken, intact} <= sessions  # the broken session's document, and the next session
        assert any(e["kind"] == "archived_entry" and e["session_id"] == intact for e in lines)
        await store.put(oldest, kept)
        healed = _lines(await behind.get("/api/me/export", headers={PRINCIPAL: ada}))
        assert healed[-1]["complete"] and healed[-1]["errors"] == 0
    finally:
        await store.close()
