"""The Users view: a user's memory (listed, searched, paged, deleted), their sessions across the
agents, the NDJSON export and the erasure with its receipt, on the real host in Chromium."""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from console_support import BrowserPage, api
from e2e_support import FUNCTION_KEY, HostProcess
from playwright.sync_api import Browser, expect

from agents.testing import ModelServer, Reply


def _user(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"  # the shared host's memory outlives one test


def _remember(page: BrowserPage, model: ModelServer, user: str, *facts: str) -> str:
    """A concierge turn of `user` that remembers `facts`; its session id."""
    model.script(Reply.tool_calls([("remember", {"fact": f}) for f in facts]), Reply.text("Noted."))
    body: dict[str, Any] = {"message": "Please remember this.", "user_id": user}
    return str(api(page.base_url, "POST", "/api/agents/concierge/run", body)["session_id"])


def test_memory_is_listed_searched_and_paged_and_the_sessions_link_to_the_session(
    page: BrowserPage, model: ModelServer
) -> None:
    user = _user("pager")
    facts = [f"Fact number {i} about travel." for i in range(21)] + ["The traveller loves zebras."]
    session = _remember(page, model, user, *facts)
    view = page.open("users")
    view.fill("#user-id", user)
    view.get_by_role("button", name="Show user").click()
    rows = view.locator("#memories-table tbody tr")
    expect(rows).to_have_count(20)  # one page
    expect(view.locator("#memories-table")).to_contain_text("concierge")  # the source session's agent
    expect(rows.first.locator("td").nth(2)).to_have_text(session)
    view.click("#more-memories")
    expect(rows).to_have_count(22)
    expect(view.locator("#more-memories")).to_be_hidden()
    assert sorted(rows.locator("td.memory-text").all_inner_texts()) == sorted(facts)
    page.shot("users")

    view.fill("#memory-query", "ZEBRAS")
    view.locator("#memory-search").get_by_role("button", name="Search").click()
    expect(rows).to_have_count(1)
    expect(rows.first.locator("td.memory-text")).to_have_text("The traveller loves zebras.")
    view.fill("#memory-query", "unicorn")
    view.locator("#memory-search").get_by_role("button", name="Search").click()
    expect(view.locator("#no-memories")).to_be_visible()
    expect(rows).to_have_count(0)

    # The user's session, across agents, opens in the session view acting for its owner.
    sessions = view.locator("#user-sessions-table")
    expect(sessions.locator("tbody tr")).to_have_count(1)
    expect(sessions).to_contain_text("concierge")
    sessions.get_by_role("link", name=session).click()
    expect(view.locator("#turn-count")).to_have_text("1")


def test_a_memory_is_deleted_after_a_confirmation_and_hostile_text_stays_text(
    page: BrowserPage, model: ModelServer
) -> None:
    user = _user("deleter")
    hostile = "<img src=x onerror=alert(1)> likes aisle seats"
    _remember(page, model, user, hostile, "The traveller is vegetarian.")
    view = page.open(f"users/{user}")
    rows = view.locator("#memories-table tbody tr")
    expect(rows).to_have_count(2)
    cell = rows.locator("td.memory-text").filter(has_text="onerror")
    expect(cell).to_have_text(hostile)  # as text: the markup is visible, not parsed
    expect(view.locator("#memories-table img")).to_have_count(0)
    assert page.dialogs == []

    victim = rows.filter(has_text="vegetarian")
    victim.get_by_role("button", name="Delete…").click()
    dialog = view.locator("#confirm-dialog")
    expect(dialog).to_contain_text("The traveller is vegetarian.")
    dialog.get_by_role("button", name="Cancel").click()
    expect(rows).to_have_count(2)
    victim.get_by_role("button", name="Delete…").click()
    dialog.get_by_role("button", name="Delete").click()
    expect(rows).to_have_count(1)
    listed = api(page.base_url, "GET", f"/api/users/{user}/memories")
    assert [i["text"] for i in listed["items"]] == [hostile]
    assert page.dialogs == []


def test_the_export_downloads_ndjson_and_erasing_shows_a_receipt_and_empties_the_user(
    page: BrowserPage, model: ModelServer
) -> None:
    user = _user("eraser")
    fact = "The traveller flies from Oslo."
    session = _remember(page, model, user, fact)
    view = page.open(f"users/{user}")
    expect(view.locator("#memories-table tbody tr")).to_have_count(1)

    with view.expect_download() as waiting:
        view.get_by_role("link", name="Download export").click()
    download = waiting.value
    assert download.suggested_filename == f"{user}.ndjson"
    lines = [json.loads(line) for line in pathlib_text(download.path()).splitlines()]
    assert lines[0] == {**lines[0], "kind": "user", "user_id": user}
    assert [m["text"] for m in lines if m["kind"] == "memory"] == [fact]
    assert [s["session_id"] for s in lines if s["kind"] == "session"] == [session]
    assert lines[-1]["kind"] == "end" and lines[-1]["complete"] is True

    erase = view.locator("#erase-user")
    expect(erase).to_be_disabled()
    view.fill("#erase-confirm", user[:-1])  # not quite the id
    expect(erase).to_be_disabled()
    view.fill("#erase-confirm", user)
    erase.click()
    expect(view.locator("#erasure-status")).to_have_text("completed", timeout=30_000)
    expect(view.locator("#erased-memories")).to_have_text("1")
    expect(view.locator("#erased-sessions")).to_have_text("concierge: 1")
    expect(view.locator("#no-memories")).to_be_visible()
    expect(view.locator("#memories-table tbody tr")).to_have_count(0)
    page.shot("users-erased")
    assert api(page.base_url, "GET", f"/api/users/{user}/memories")["items"] == []
    view.reload()
    expect(view.locator("#no-user-sessions")).to_be_visible()


def pathlib_text(path: Any) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def test_the_export_sends_the_function_key_and_a_refused_user_id_shows_the_problem(
    keyed_page: BrowserPage, model: ModelServer
) -> None:
    user = _user("keyed")
    model.script(Reply.tool_calls([("remember", {"fact": "Keyed fact."})]), Reply.text("Noted."))
    api(
        keyed_page.base_url,
        "POST",
        "/api/agents/concierge/run",
        {"message": "hi", "user_id": user},
        key=FUNCTION_KEY,
    )
    view = keyed_page.open(f"users/{user}")
    view.get_by_role("textbox", name="Function key").fill(FUNCTION_KEY)
    view.get_by_role("button", name="Use this key").click()
    expect(view.locator("#memories-table tbody tr")).to_have_count(1)
    # A plain link could not send the key header: the download is fetched with it.
    with view.expect_download() as waiting:
        view.get_by_role("link", name="Download export").click()
    lines = [json.loads(line) for line in pathlib_text(waiting.value.path()).splitlines()]
    assert [m["text"] for m in lines if m["kind"] == "memory"] == ["Keyed fact."]
    assert not [u for u in keyed_page.requests if "code=" in u], "the key must travel in a header"

    # An id outside the id rule: the API's problem is shown, code and message.
    view.fill("#user-id", "no spaces allowed")
    view.get_by_role("button", name="Show user").click()
    problem = view.locator("#memories-status .problem")
    expect(problem).to_contain_text("invalid_user_id")
    expect(problem).to_contain_text("Could not list the memory")


PRINCIPAL = "X-MS-CLIENT-PRINCIPAL-ID"


@pytest.fixture(scope="module")
def signed_in_host(
    model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostProcess]:
    """The host with App Service Authentication on: the principal header names the user (the
    browser sends it as the platform would after sign-in)."""
    root = tmp_path_factory.mktemp("console-signed-in")
    host = HostProcess(
        root / "data",
        model_server.base_url,
        root / "host.log",
        function_key=None,
        extra_env={"WEBSITE_AUTH_ENABLED": "True"},
    ).start()
    try:
        yield host
    finally:
        host.stop()


def test_the_signed_in_user_sees_and_erases_their_own_data_through_me(
    browser: Browser, signed_in_host: HostProcess, model: ModelServer, request: pytest.FixtureRequest
) -> None:
    user = _user("me")
    model.script(Reply.tool_calls([("remember", {"fact": "Signed-in fact."})]), Reply.text("Noted."))
    call = urllib.request.Request(
        f"{signed_in_host.url}/api/agents/concierge/run",
        data=json.dumps({"message": "hi"}).encode(),
        method="POST",
    )
    call.add_header("Content-Type", "application/json")
    call.add_header(PRINCIPAL, user)
    with urllib.request.urlopen(call, timeout=30) as answer:
        session = json.loads(answer.read())["session_id"]
    ctx = browser.new_context(extra_http_headers={PRINCIPAL: user}, viewport={"width": 1280, "height": 900})
    try:
        page = BrowserPage(ctx.new_page(), signed_in_host.url, request.node.name)
        view = page.open("users")
        view.get_by_role("button", name="Signed-in user (me)").click()
        rows = view.locator("#memories-table tbody tr")
        expect(rows).to_have_count(1)
        expect(rows.first.locator("td.memory-text")).to_have_text("Signed-in fact.")
        assert any("/api/me/memories" in u for u in page.requests)
        expect(view.locator("#user-sessions-table").get_by_role("link", name=session)).to_be_visible()

        view.fill("#erase-confirm", "me")
        view.locator("#erase-user").click()
        expect(view.locator("#erasure-status")).to_have_text("completed", timeout=30_000)
        expect(view.locator("#erased-memories")).to_have_text("1")
        expect(view.locator("#erased-sessions")).to_have_text("concierge: 1")
        expect(view.locator("#no-memories")).to_be_visible()

        view.locator("#user-sessions-table").get_by_role("link", name=session).click()
        expect(view.locator("#session-view .problem")).to_contain_text("No such session")
        assert not page.errors, page.errors
    finally:
        ctx.close()
