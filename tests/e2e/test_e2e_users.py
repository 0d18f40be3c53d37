"""Users and session ownership over real HTTP: a session belongs to the user who created it, and
to any other caller it does not exist, on every route (run, read, history, run status, stream,
reset, delete, the sessions list, MCP). Behind App Service Authentication the user is the
signed-in principal; elsewhere a caller with a function key names it (`user_id`)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from e2e_support import FUNCTION_KEY, Client, HostProcess, eventually, history
from mcp_support import TRANSPORTS, Transport, mcp_session, text_of

from agents.testing import ModelServer, Reply

RUN = "/api/agents/assistant/run"
PRINCIPAL = "X-MS-CLIENT-PRINCIPAL-ID"


def _sid() -> str:
    return "own-" + uuid.uuid4().hex[:12]


def _as(user: str | None) -> str:
    return "" if user is None else f"?user_id={user}"


async def _owned_session(client: Client, model: ModelServer, user: str) -> tuple[str, str]:
    """A session `user` created with one finished turn: (session id, run id)."""
    model.script(Reply.text("hello u1"))
    session = _sid()
    answer = await client.run("assistant", "I like tea.", session, user_id=user)
    assert answer.status == 200, answer.body
    return session, answer.json()["correlation_id"]


async def _hidden_everywhere(client: Client, session: str, run: str, user: str | None) -> None:
    """Every route answers 404 session_not_found to `user` (None: a caller acting for no one)."""
    base = f"/api/agents/assistant/sessions/{session}"
    q = _as(user)
    routes = [
        ("GET", f"{base}{q}"),
        ("GET", f"{base}/history{q}"),
        ("GET", f"{base}/runs/{run}{q}"),
        ("GET", f"{base}/runs/{run}/stream{q}"),
        ("POST", f"{base}/reset{q}"),
        ("DELETE", f"{base}{q}"),
    ]
    for method, path in routes:
        answer = await client.request(method, path)
        assert answer.status == 404, (method, path, answer.status, answer.body[:300])
        assert answer.content_type == "application/problem+json"
        assert answer.json()["code"] == "session_not_found", (method, path)
    body = {"message": "show me their history", "session_id": session}
    if user is not None:
        body["user_id"] = user
    run_answer = await client.post(RUN, json_body=body)
    assert run_answer.status == 404 and run_answer.json()["code"] == "session_not_found", run_answer.body
    listed = await client.get(f"/api/agents/assistant/sessions?page_size=100{q.replace('?', '&')}")
    assert listed.status == 200, listed.body
    assert session not in {s["session_id"] for s in listed.json()["sessions"]}


async def test_a_session_is_its_creators_alone_on_every_route(client: Client, model: ModelServer) -> None:
    session, run = await _owned_session(client, model, "u1")
    stored = (await client.get(f"/api/agents/assistant/sessions/{session}?user_id=u1")).json()["state"]
    assert stored["data"]["userId"] == "u1"
    for other in ("u2", None):
        await _hidden_everywhere(client, session, run, other)
    assert model.requests and len(model.requests) == 1  # no other user's turn reached the model
    # The owner still has everything, unchanged by the attempts.
    own = await client.get(f"/api/agents/assistant/sessions/{session}?user_id=u1")
    assert own.status == 200 and len(history(own.json()["state"])) == 2
    status = await client.get(f"/api/agents/assistant/sessions/{session}/runs/{run}?user_id=u1")
    assert status.status == 200 and status.json()["status"] == "succeeded"
    # The shared host holds other tests' sessions too: follow the pages (others' are left out).
    seen: set[str] = set()
    token: str | None = None
    while True:
        query = "page_size=100&user_id=u1" + (f"&continuation={token}" if token else "")
        page = (await client.get(f"/api/agents/assistant/sessions?{query}")).json()
        seen |= {s["session_id"] for s in page["sessions"]}
        # Each listed session names its owner: u1, or no one (never another user).
        assert {s["user_id"] for s in page["sessions"]} <= {"u1", None}, page["sessions"]
        owners = {s["session_id"]: s["user_id"] for s in page["sessions"]}
        token = page["continuation"]
        if session in seen or token is None:
            break
    assert session in seen and owners[session] == "u1"
    # A reset empties the session; it stays the owner's.
    assert (await client.post(f"/api/agents/assistant/sessions/{session}/reset?user_id=u1")).status == 202

    async def reset_done() -> bool:
        answer = await client.get(f"/api/agents/assistant/sessions/{session}?user_id=u1")
        return answer.status == 200 and history(answer.json()["state"]) == []

    await eventually(reset_done, "the reset")
    assert (await client.get(f"/api/agents/assistant/sessions/{session}?user_id=u2")).status == 404


async def test_sessions_without_a_user_stay_open_to_every_caller(client: Client, model: ModelServer) -> None:
    model.script(Reply.text("one"), Reply.text("two"))
    session = _sid()
    assert (await client.run("assistant", "hi", session)).status == 200
    # A caller acting for a user still reaches a session of no one in particular, as before.
    later = await client.run("assistant", "again", session, user_id="u9")
    assert later.status == 200, later.body
    state = (await client.get(f"/api/agents/assistant/sessions/{session}?user_id=u7")).json()["state"]
    assert "userId" not in state["data"] and len(history(state)) == 4


async def test_the_same_idempotency_key_of_two_users_lands_in_two_sessions(
    client: Client, model: ModelServer
) -> None:
    model.script(Reply.text("for u1"), Reply.text("for u2"))
    key = {"Idempotency-Key": "key-" + uuid.uuid4().hex}
    first = await client.post(RUN, json_body={"message": "hi", "user_id": "u1"}, headers=key)
    second = await client.post(RUN, json_body={"message": "hi", "user_id": "u2"}, headers=key)
    assert first.status == 200 and second.status == 200, (first.body, second.body)
    assert first.json()["session_id"] != second.json()["session_id"]
    assert second.json()["response"]["text"] == "for u2"


@pytest.mark.parametrize(
    ("where", "value", "code"),
    [
        ("body", "a/b", "invalid_user_id"),
        ("body", "", "invalid_user_id"),
        ("body", "x" * 129, "invalid_user_id"),
        ("body", "..", "invalid_user_id"),
        ("query", "a%20b", "invalid_user_id"),
        ("query", "%C3%A9", "invalid_user_id"),
        ("both", "u1", "conflicting_fields"),
    ],
)
async def test_bad_user_ids_are_refused_and_store_nothing(
    client: Client, model: ModelServer, where: str, value: str, code: str
) -> None:
    session = _sid()
    body: dict[str, object] = {"message": "hi", "session_id": session}
    path = RUN
    if where in ("body", "both"):
        body["user_id"] = value
    if where == "query":
        path += f"?user_id={value}"
    if where == "both":
        path += "?user_id=u2"
    answer = await client.post(path, json_body=body)
    assert answer.status == 400, answer.body
    assert answer.content_type == "application/problem+json"
    assert answer.json()["code"] == code and answer.json()["field"] == "user_id"
    assert (await client.get(f"/api/agents/assistant/sessions/{session}")).status == 404
    assert model.requests == []
    read = await client.get(f"/api/agents/assistant/sessions/{session}?user_id=a%2Fb")
    assert read.status == 400 and read.json()["code"] == "invalid_user_id"


async def test_without_easy_auth_principal_headers_are_ignored(client: Client, model: ModelServer) -> None:
    # Outside App Service Authentication anybody can send the header: it names no one.
    model.script(Reply.text("x"))
    session = _sid()
    answer = await client.post(
        RUN, json_body={"message": "hi", "session_id": session}, headers={PRINCIPAL: "u1"}
    )
    assert answer.status == 200, answer.body
    state = (await client.get(f"/api/agents/assistant/sessions/{session}?user_id=u2")).json()["state"]
    assert "userId" not in state["data"]


async def test_mcp_calls_see_only_their_users_sessions(
    e2e_host: HostProcess, client: Client, model: ModelServer
) -> None:
    session, _run = await _owned_session(client, model, "u1")
    async with mcp_session(e2e_host.url, "streamable-http", FUNCTION_KEY) as mcp:
        for arguments in ({"user_id": "u2"}, {}):
            result = await mcp.call_tool("assistant", {"query": "hi", "session_id": session, **arguments})
            assert result.is_error, result
            assert result.structured_content["code"] == "session_not_found", result.structured_content
        model.script(Reply.text("welcome back"))
        own = await mcp.call_tool("assistant", {"query": "hi", "session_id": session, "user_id": "u1"})
        assert not own.is_error, own
        assert text_of(own) == "welcome back"
        bad = await mcp.call_tool("assistant", {"query": "hi", "user_id": "a/b"})
        assert bad.is_error and bad.structured_content["code"] == "invalid_user_id"
    assert len(model.requests) == 2


@pytest.fixture(scope="module")
def auth_host(model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostProcess]:
    """A host told App Service Authentication is on. The local host has no Easy Auth of its own:
    the tests send the principal header as the platform would set it."""
    root = tmp_path_factory.mktemp("auth-host")
    host = HostProcess(
        root / "data", model_server.base_url, root / "host.log", extra_env={"WEBSITE_AUTH_ENABLED": "True"}
    ).start()
    try:
        yield host
    finally:
        host.stop()


async def test_behind_easy_auth_the_principal_is_the_user(
    auth_host: HostProcess, client: Client, model: ModelServer
) -> None:
    behind = Client(client.session, auth_host.url)
    model.script(Reply.text("hi ada"))
    session = _sid()
    created = await behind.post(
        RUN, json_body={"message": "hi", "session_id": session}, headers={PRINCIPAL: "ada"}
    )
    assert created.status == 200, created.body
    path = f"/api/agents/assistant/sessions/{session}"
    own = await behind.get(path, headers={PRINCIPAL: "ada"})
    assert own.status == 200 and own.json()["state"]["data"]["userId"] == "ada"
    assert (await behind.get(path, headers={PRINCIPAL: "bob"})).status == 404
    assert (await behind.get(path)).status == 404  # signed in as no one
    # user_id cannot name anyone but the signed-in user here.
    for headers in ({PRINCIPAL: "bob"}, {}):
        forged = await behind.get(path + "?user_id=ada", headers=headers)
        assert forged.status == 403, forged.body
        assert forged.json()["code"] == "user_mismatch"
    same = await behind.get(path + "?user_id=ada", headers={PRINCIPAL: "ada"})
    assert same.status == 200


IDP = "X-MS-CLIENT-PRINCIPAL-IDP"
MAPPED = re.compile(r"~[0-9a-f]{40}")


async def test_behind_easy_auth_a_principal_id_that_is_not_url_safe_is_stored_as_a_digest(
    auth_host: HostProcess, client: Client, model: ModelServer
) -> None:
    """A provider's subject may hold `|`, `:`, `@`, `+`, `/` (Auth0's `auth0|...`): the user is
    stored under a digest of provider and id, every route works, and the export names the
    original; a URL-safe principal keeps its own id (data stored before stays theirs)."""
    behind = Client(client.session, auth_host.url)
    stored: dict[str, str] = {}
    for principal in ("auth0|abc", "a:b@c+d/e", "user name", "~looks-mapped"):
        signed_in = {PRINCIPAL: principal, IDP: "auth0"}
        model.script(Reply.text("hi"))
        session = _sid()
        body = {"message": "hi", "session_id": session}
        created = await behind.post(RUN, json_body=body, headers=signed_in)
        assert created.status == 200, (principal, created.body)
        path = f"/api/agents/assistant/sessions/{session}"
        own = await behind.get(path, headers=signed_in)
        assert own.status == 200, own.body
        user = own.json()["state"]["data"]["userId"]
        assert MAPPED.fullmatch(user), user
        stored[principal] = user
        # The same subject at another provider is another user; so is a near miss.
        assert (await behind.get(path, headers={PRINCIPAL: principal, IDP: "github"})).status == 404
        assert (await behind.get(path, headers={PRINCIPAL: principal + "x", IDP: "auth0"})).status == 404
        # The stored id may be repeated as user_id, and names the session's owner everywhere.
        assert (await behind.get(f"{path}?user_id={user}", headers=signed_in)).status == 200
        listed = await behind.get("/api/agents/assistant/sessions?page_size=100", headers=signed_in)
        assert session in {s["session_id"] for s in listed.json()["sessions"]}
        exported = await behind.get("/api/me/export", headers=signed_in)
        assert exported.status == 200, exported.body
        first = json.loads(exported.body.splitlines()[0])
        assert first["user_id"] == user and first["principal"] == {"provider": "auth0", "id": principal}
        assert session in exported.body.decode()
    assert len(set(stored.values())) == len(stored)
    model.script(Reply.text("hi"))
    session = _sid()
    kept = await behind.post(RUN, json_body={"message": "hi", "session_id": session},
                             headers={PRINCIPAL: "ada.1"})
    assert kept.status == 200
    own = await behind.get(f"/api/agents/assistant/sessions/{session}", headers={PRINCIPAL: "ada.1"})
    assert own.json()["state"]["data"]["userId"] == "ada.1"


async def test_a_repeated_user_id_query_parameter_is_refused(client: Client, model: ModelServer) -> None:
    """`?user_id=bob&user_id=alice` names two users: 400, never an act for one of them."""
    session, run = await _owned_session(client, model, "u1")
    base = f"/api/agents/assistant/sessions/{session}"
    for path in (f"{base}?user_id=u2&user_id=u1", f"{base}/runs/{run}?user_id=u1&user_id=u1",
                 "/api/agents/assistant/sessions?user_id=u2&user_id=u1",
                 "/api/users/u1/export?user_id=u1&user_id=u2",
                 "/api/me/memories?user_id=u1&user_id=u1"):
        answer = await client.get(path)
        assert answer.status == 400, (path, answer.status, answer.body[:300])
        assert answer.content_type == "application/problem+json"
        assert answer.json()["code"] == "invalid_user_id" and answer.json()["field"] == "user_id", path
    body = {"message": "hi", "session_id": session}
    sent = await client.post(f"{RUN}?user_id=u2&user_id=u1", json_body=body)
    assert sent.status == 400 and sent.json()["code"] == "invalid_user_id", sent.body
    assert len(model.requests) == 1


async def test_the_sessions_lists_next_page_keeps_the_user(client: Client, model: ModelServer) -> None:
    model.script(Reply.text("a"), Reply.text("b"))
    mine = {_sid(), _sid()}
    for session in sorted(mine):
        assert (await client.run("assistant", "hi", session, user_id="pager")).status == 200
    seen: set[str] = set()
    path: str | None = "/api/agents/assistant/sessions?page_size=1&user_id=pager"
    while path is not None:
        page = await client.get(path)
        assert page.status == 200, page.body
        body = page.json()
        seen |= {s["session_id"] for s in body["sessions"]}
        path = body["next"]
        if path is not None:
            assert "user_id=pager" in path
            parts = urlsplit(path)
            path = f"{parts.path}?{parts.query}"
    assert mine <= seen
    for session in seen:  # only sessions this user may see: theirs, and those of no one
        answer = await client.get(f"/api/agents/assistant/sessions/{session}?user_id=pager")
        assert answer.status == 200, (session, answer.body[:200])


async def test_another_user_cannot_join_a_pending_first_run(client: Client, model: ModelServer) -> None:
    # Before its first turn is stored a session has no owner to check; the run's claim knows it.
    session = _sid()
    model.script(Reply.delay(1.0, then=Reply.text("for u1 only")))
    body = {"message": "hi", "session_id": session, "correlation_id": "first", "user_id": "u1"}
    accepted = await client.post(RUN, json_body={**body, "wait_for_response": False})
    assert accepted.status == 202, accepted.body
    for accept in ("text/event-stream", "application/json"):
        joined = await client.post(RUN, json_body={**body, "user_id": "u2"}, headers={"Accept": accept})
        assert joined.status == 404, (accept, joined.status, joined.body[:300])
        assert joined.json()["code"] == "session_not_found"
    done = await client.get(f"/api/agents/assistant/sessions/{session}/runs/first?wait=20&user_id=u1")
    assert done.status == 200 and done.json()["status"] == "succeeded", done.body
    assert done.json()["response"]["text"] == "for u1 only"
    assert len(model.requests) == 1


async def test_another_user_cannot_follow_a_pending_first_runs_stream(
    client: Client, model: ModelServer
) -> None:
    session = _sid()
    model.script(Reply.delay(1.0, then=Reply.text("for u1 only")), Reply.delay(1.0, then=Reply.text("open")))
    body = {"message": "hi", "session_id": session, "correlation_id": "first", "user_id": "u1"}
    assert (await client.post(RUN, json_body={**body, "wait_for_response": False})).status == 202
    stream = f"/api/agents/assistant/sessions/{session}/runs/first/stream"
    for user in ("u2", None):
        followed = await client.get(stream + _as(user))
        assert followed.status == 404 and followed.json()["code"] == "session_not_found", followed.body[:300]
    own = await client.get(stream + "?user_id=u1")
    assert own.status == 200 and b"for u1 only" in own.body
    # A pending run of no one in particular is anyone's to follow, as its session is.
    open_session = _sid()
    assert (await client.post(RUN, json_body={
        "message": "hi", "session_id": open_session, "correlation_id": "r", "wait_for_response": False,
    })).status == 202
    anyone = await client.get(f"/api/agents/assistant/sessions/{open_session}/runs/r/stream?user_id=u7")
    assert anyone.status == 200 and b"open" in anyone.body


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_behind_easy_auth_an_mcp_call_acts_for_the_signed_in_principal(
    auth_host: HostProcess, client: Client, model: ModelServer, transport: Transport
) -> None:
    """The MCP extension hands the tool every header of the call's HTTP request, App Service
    Authentication's principal among them: the call acts for that user, as an HTTP request does."""
    behind = Client(client.session, auth_host.url)
    signed_in = {PRINCIPAL: "mcp-user", IDP: "aad"}
    model.script(Reply.text("hi"))
    session = _sid()
    body = {"message": "hi", "session_id": session}
    created = await behind.post(RUN, json_body=body, headers=signed_in)
    assert created.status == 200, created.body
    user = (await behind.get(f"/api/agents/assistant/sessions/{session}", headers=signed_in)).json()
    owner = user["state"]["data"]["userId"]
    async with mcp_session(auth_host.url, transport, FUNCTION_KEY, signed_in) as mcp:
        model.script(Reply.text("welcome back"))
        own = await mcp.call_tool("assistant", {"query": "again", "session_id": session})
        assert not own.is_error, own
        assert text_of(own) == "welcome back"
        model.script(Reply.text("still you"))
        arguments = {"query": "and", "session_id": session, "user_id": owner}
        repeated = await mcp.call_tool("assistant", arguments)
        assert not repeated.is_error, repeated
        forged = await mcp.call_tool("assistant", {"query": "x", "session_id": session, "user_id": "u1"})
        assert forged.is_error and forged.structured_content["code"] == "user_mismatch", forged
    for headers in ({PRINCIPAL: "auth0|other", IDP: "auth0"}, {}):
        async with mcp_session(auth_host.url, transport, FUNCTION_KEY, headers) as mcp:
            other = await mcp.call_tool("assistant", {"query": "theirs", "session_id": session})
            assert other.is_error and other.structured_content["code"] == "session_not_found", other
    history_of = await behind.get(f"/api/agents/assistant/sessions/{session}", headers=signed_in)
    assert [e["$type"] for e in history(history_of.json()["state"])].count("request") == 3
