"""Sessions in the console: the list, one session's turns and state bag, reset and delete."""

from __future__ import annotations

import json
import threading

from console_support import BrowserPage, api, held_until
from playwright.sync_api import expect

from agents.testing import ModelServer, Reply
from state import CURRENT_SCHEMA_VERSION

FACT = "The traveller prefers window seats."


def test_the_state_bag_shows_a_remembered_fact_and_reset_empties_it(
    page: BrowserPage, model: ModelServer
) -> None:
    model.script(Reply.tool_call("remember", {"fact": FACT}), Reply.text("Noted: window seats."))
    view = page.open("chat/concierge")
    view.fill("#message", "Remember that I like window seats")
    view.click("#send")
    expect(view.locator("#transcript .msg.assistant:not(.live)")).to_have_count(1)
    view.click("#session-details")
    expect(view.locator("#state-bag")).to_contain_text(FACT)
    bag = json.loads(view.locator("#state-bag").inner_text())
    assert [f["text"] for f in bag["memory"]["facts"]] == [FACT]
    expect(view.locator("#schema-version")).to_have_text(CURRENT_SCHEMA_VERSION)
    expect(view.locator("#turn-count")).to_have_text("1")
    assert view.locator("#session-size").inner_text().endswith(("B", "KiB"))
    rows = view.locator("#turns-table tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("succeeded")
    expect(rows.first).to_contain_text(" in · ")  # token usage
    page.shot("session")

    # Reset asks first; cancelling changes nothing.
    view.click("#reset-session")
    dialog = view.locator("#confirm-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("loses its whole history and state bag")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    expect(view.locator("#state-bag")).to_contain_text(FACT)

    view.click("#reset-session")
    dialog.get_by_role("button", name="Reset").click()
    expect(view.locator("#turn-count")).to_have_text("0", timeout=15_000)
    assert FACT not in view.locator("#state-bag").inner_text()
    assert json.loads(view.locator("#state-bag").inner_text()) == {}


def test_the_session_list_links_to_sessions_and_delete_removes_one(
    page: BrowserPage, model: ModelServer
) -> None:
    model.script(Reply.text("one"), Reply.text("two"))
    made = [
        api(page.base_url, "POST", "/api/agents/writer/run", {"message": f"Draft about topic {i}"})
        for i in range(2)
    ]
    ids = {m["session_id"] for m in made}
    view = page.open("sessions/writer")
    table = view.locator("#sessions-table")
    for session_id in ids:
        expect(table.get_by_role("link", name=session_id)).to_be_visible()
    expect(table).to_contain_text("Draft about topic 0")
    page.shot("sessions")
    victim = sorted(ids)[0]
    table.get_by_role("link", name=victim).click()
    expect(view.locator("#turn-count")).to_have_text("1")
    view.click("#delete-session")
    view.locator("#confirm-dialog").get_by_role("button", name="Delete").click()
    # Back at the list once the session is gone; the other one is still there.
    # The table is shown before its rows load: wait for the rows (the other session) before
    # checking the victim is not among them, or that check would pass on the empty table.
    listed = view.locator("#sessions-table")
    expect(listed.get_by_role("link", name=sorted(ids)[1])).to_be_visible()
    expect(listed.get_by_role("link", name=victim)).to_have_count(0)


def test_a_run_by_correlation_id(page: BrowserPage, model: ModelServer) -> None:
    model.script(Reply.text("The run's *answer*."))
    body = {"message": "hello", "correlation_id": "run-42"}
    run = api(page.base_url, "POST", "/api/agents/assistant/run", body)
    view = page.open("runs")
    view.select_option("select[name=agent]", "assistant")
    view.fill("input[name=session]", run["session_id"])
    view.fill("input[name=run]", "run-42")
    view.get_by_role("button", name="Show run").click()
    expect(view.locator("#run-status")).to_have_text("succeeded")
    expect(view.locator("#run-view .markdown em")).to_have_text("answer")
    page.shot("run")


def test_a_mistyped_run_id_is_called_unknown_after_a_bounded_wait(
    page: BrowserPage, model: ModelServer
) -> None:
    # The run resource answers `pending` for any id (a run may still be queued); the console asks
    # the run's stream, which knows every run that has started, and gives up after a bounded wait.
    model.script(Reply.text("here"))
    run = api(
        page.base_url, "POST", "/api/agents/assistant/run", {"message": "hi", "correlation_id": "real-run"}
    )
    view = page.open(f"runs/assistant/{run['session_id']}/reel-run")
    expect(view.locator("#run-status")).to_have_text("pending")
    expect(view.locator("#run-status")).to_have_text("unknown", timeout=30_000)
    unknown = view.locator("#run-unknown")
    expect(unknown).to_contain_text("has no run reel-run")
    expect(unknown.get_by_role("link", name="the session's turns")).to_have_attribute(
        "href", f"#/sessions/assistant/{run['session_id']}"
    )


def test_runs_lists_the_agents_recent_runs_with_status_and_links(
    page: BrowserPage, model: ModelServer
) -> None:
    model.script(Reply.text("first"), Reply.text("second"))
    first = api(
        page.base_url, "POST", "/api/agents/concierge/run", {"message": "a", "correlation_id": "recent-a"}
    )
    second = api(
        page.base_url,
        "POST",
        "/api/agents/concierge/run",
        {"message": "b", "correlation_id": "recent-b", "session_id": first["session_id"]},
    )
    assert second["session_id"] == first["session_id"]
    view = page.open("runs/concierge")
    table = view.locator("#recent-runs")
    expect(table.get_by_role("link", name="recent-b")).to_be_visible()
    rows = table.locator("tbody tr")
    # Newest first: the second run is above the first.
    expect(rows.nth(0)).to_contain_text("recent-b")
    expect(rows.nth(1)).to_contain_text("recent-a")
    expect(rows.nth(0)).to_contain_text("succeeded")
    expect(rows.nth(0).get_by_role("link", name=first["session_id"])).to_have_attribute(
        "href", f"#/sessions/concierge/{first['session_id']}"
    )
    table.get_by_role("link", name="recent-a").click()
    expect(view.locator("#run-status")).to_have_text("succeeded")
    expect(view.locator("#run-view")).to_contain_text("first")


def test_sessions_are_listed_most_recent_first(page: BrowserPage, model: ModelServer) -> None:
    model.handler = lambda request: Reply.text("ok")
    # Created in this order, continued last: recency order differs from id order both ways.
    for session_id in ("recency-c", "recency-a", "recency-b", "recency-c"):
        api(
            page.base_url,
            "POST",
            "/api/agents/writer/run",
            {"message": f"to {session_id}", "session_id": session_id},
        )
    view = page.open("sessions/writer")
    table = view.locator("#sessions-table")
    expect(table.get_by_role("link", name="recency-b")).to_be_visible()
    shown = [t for t in table.locator("tbody th a").all_inner_texts() if t.startswith("recency-")]
    assert shown == ["recency-c", "recency-b", "recency-a"]


def test_sessions_and_runs_open_on_the_agent_of_the_chat(page: BrowserPage, model: ModelServer) -> None:
    view = page.open("chat/reviewer")
    expect(view.locator("select[name=agent]")).to_have_value("reviewer")
    view.locator("nav").get_by_role("link", name="Sessions").click()
    expect(view.locator("#sessions-table caption")).to_contain_text("Sessions of reviewer")
    expect(view.locator("select[name=agent]")).to_have_value("reviewer")
    view.locator("nav").get_by_role("link", name="Runs").click()
    expect(view.locator("#recent-runs caption")).to_contain_text("Recent runs of reviewer")
    expect(view.locator("select[name=agent]")).to_have_value("reviewer")
    # Picking another agent there is remembered in turn.
    view.select_option("select[name=agent]", "concierge")
    expect(view.locator("#recent-runs caption")).to_contain_text("Recent runs of concierge")
    view.locator("nav").get_by_role("link", name="Chat").click()
    expect(view.locator("select[name=agent]")).to_have_value("concierge")


def test_a_running_run_is_followed_until_it_finishes(page: BrowserPage, model: ModelServer) -> None:
    # A slow model: the run is still going when the page opens it (live stream where the server
    # streams, the run resource's long poll where it does not). The model answers only once the
    # page shows the run pending: a fixed delay raced the page's loading on a slow machine.
    release = threading.Event()
    model.handler = held_until(release, Reply.text("A *slow* answer, at last."))
    body = {"message": "take your time", "correlation_id": "slow-run", "wait_for_response": False}
    run = api(page.base_url, "POST", "/api/agents/assistant/run", body)
    assert run["status"] == "pending"
    view = page.open(f"runs/assistant/{run['session_id']}/slow-run")
    expect(view.locator("#run-status")).to_have_text("pending")
    release.set()
    expect(view.locator("#run-status")).to_have_text("succeeded", timeout=20_000)
    expect(view.locator("#run-view .markdown em")).to_have_text("slow")


def test_the_session_list_loads_more_pages(page: BrowserPage, model: ModelServer) -> None:
    model.handler = lambda request: Reply.text("ok")
    made = {
        api(page.base_url, "POST", "/api/agents/assistant/run", {"message": f"paging {i}"})["session_id"]
        for i in range(22)
    }
    view = page.open("sessions/assistant")
    links = view.locator("#sessions-table tbody th a")
    expect(links).to_have_count(20)  # one page
    more = view.locator("#more-sessions")
    while more.is_visible():
        before = links.count()
        more.click()
        expect(links).not_to_have_count(before)
    shown = set(links.all_inner_texts())
    assert made <= shown and len(shown) == links.count()  # every session once
