"""The console's layout measured in Chromium at a phone's width (375 px) and a desktop's (1280 px):
element boxes and text, never pixels (Chromium versions draw differently). Each test saves its
screenshots under test-artifacts/console/ (`layout-*-375.png`, `layout-*-1280.png`) to look at.

Also the runs in progress, which the console lists where it lists finished runs: a run awaiting
approval is found from the Sessions, Runs and Chat views and decided there."""

from __future__ import annotations

import re
import uuid
from typing import Any

from console_support import BrowserPage, api
from playwright.sync_api import FloatRect, Page, expect

from agents.testing import ModelServer, Reply

RUN_ID = re.compile(r"^[0-9a-f]{32}$")
"""The server's run ids (uuid4().hex): the console makes its own the same way."""
BOOK = {"city": "Paris", "nights": 2}


def _shot(page: BrowserPage, name: str) -> None:
    width = page.page.viewport_size["width"] if page.page.viewport_size else 0
    page.shot(f"layout-{name}-{width}")


def _box(view: Page, selector: str) -> FloatRect:
    box = view.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} is not shown"
    return box


def _no_sideways_scroll(view: Page) -> None:
    widths = view.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"the page scrolls sideways: {widths}"


# Each card's empty space below its last child (padding and border aside): a card stretched to
# its row's tallest has the difference there.
CARD_SLACK = """() => [...document.querySelectorAll(".card")].map((card) => {
  const style = getComputedStyle(card);
  const last = card.lastElementChild.getBoundingClientRect();
  const margin = parseFloat(getComputedStyle(card.lastElementChild).marginBottom);
  return card.getBoundingClientRect().bottom - last.bottom - margin
    - parseFloat(style.paddingBottom) - parseFloat(style.borderBottomWidth);
})"""


def test_agent_cards_are_as_tall_as_their_content(sized: BrowserPage) -> None:
    view = sized.open("agents")
    expect(view.locator(".card")).to_have_count(4)
    _shot(sized, "agents")
    slack = view.evaluate(CARD_SLACK)
    assert all(s < 2 for s in slack), f"cards stretched beyond their content by {slack} px"
    _no_sideways_scroll(view)


def _answered(view: Page, count: int) -> None:
    expect(view.locator("#transcript .msg.assistant:not(.live)")).to_have_count(count)


def test_the_chat_header_and_every_run_id_look_alike(sized: BrowserPage, model: ModelServer) -> None:
    model.script(Reply.text("Hello there."), Reply.text("Again."))
    view = sized.open("chat/assistant")
    view.fill("#message", "hi")
    view.click("#send")
    _answered(view, 1)
    expect(view.locator("#session-details")).to_be_visible()
    _shot(sized, "chat")
    # "New session" and "Details" are apart, side by side or one above the other.
    new, details = _box(view, "#new-session"), _box(view, "#session-details")
    apart = details["x"] - (new["x"] + new["width"]) >= 6 or details["y"] - (new["y"] + new["height"]) >= 4
    assert apart, f"'Details' touches 'New session': {new} {details}"
    # Nothing in the header says only "streaming": it is how answers arrive, not news.
    shown = view.evaluate(
        """() => [...document.querySelectorAll(".chat-head *")]
          .filter((el) => el.getClientRects().length && el.children.length === 0)
          .map((el) => el.textContent.trim())"""
    )
    assert "streaming" not in shown, shown
    _no_sideways_scroll(view)

    # A run the console sent and one the server named have ids of one format.
    session = view.locator("#session-id").inner_text()
    mine = view.locator("#transcript .usage a").first.inner_text()
    again = {"message": "again", "session_id": session}
    theirs = api(sized.base_url, "POST", "/api/agents/assistant/run", again)
    assert RUN_ID.match(theirs["correlation_id"]), theirs
    assert RUN_ID.match(mine), f"the console's run id {mine!r} is not in the server's format"
    view.goto(f"{sized.base_url}/api/console/#/runs/assistant")
    links = view.locator("#recent-runs tbody th a")
    expect(links.filter(has_text=theirs["correlation_id"])).to_have_count(1)
    expect(links.filter(has_text=mine)).to_have_count(1)
    _shot(sized, "runs")
    ids = links.all_inner_texts()
    assert ids and all(RUN_ID.match(i) for i in ids), ids


def test_decisions_stay_shown_once_the_run_has_ended(sized: BrowserPage, model: ModelServer) -> None:
    model.script(
        Reply.tool_calls(
            [("book_hotel", BOOK, "call-paris"), ("book_hotel", {"city": "Rome", "nights": 1}, "call-rome")]
        ),
        Reply.text("Paris is booked; Rome was not."),
    )
    view = sized.open("chat/concierge")
    view.fill("#message", "Book Paris and Rome")
    view.click("#send")
    paris = view.locator('.approval[data-call-id="call-paris"]')
    rome = view.locator('.approval[data-call-id="call-rome"]')
    expect(paris.locator("button.approve")).to_be_visible()
    _shot(sized, "approval-waiting")
    paris.locator("button.approve").click()
    expect(paris.locator(".approval-outcome")).to_have_text("Approved.")
    rome.locator(".approval-reason").fill("one city is enough")
    rome.locator("button.reject").click()
    done = view.locator("#transcript .msg.assistant:not(.live)")
    expect(done.locator(".markdown")).to_contain_text("Paris is booked; Rome was not.")
    _shot(sized, "approval-decided")
    # In the finished answer: each decision, without its buttons, just before its tool call.
    expect(done.locator('.approval[data-call-id="call-paris"] .approval-outcome')).to_have_text("Approved.")
    expect(done.locator('.approval[data-call-id="call-rome"] .approval-outcome')).to_have_text(
        "Rejected: one city is enough"
    )
    expect(done.locator(".approval button")).to_have_count(0)
    order = view.evaluate(
        """() => [...document.querySelectorAll("#transcript .msg.assistant:not(.live) > *")]
          .map((el) => el.dataset.callId ? `${el.className.split(" ")[0]}:${el.dataset.callId}` : "")
          .filter(Boolean)"""
    )
    assert order == ["approval:call-paris", "tool:call-paris", "approval:call-rome", "tool:call-rome"], order
    box, width = _box(view, '#transcript .approval[data-call-id="call-rome"]'), view.evaluate("innerWidth")
    assert box["height"] > 0 and box["x"] >= 0 and box["x"] + box["width"] <= width, box
    _no_sideways_scroll(view)
    # Reopened later, the conversation shows the same decisions: the finished run keeps them.
    session = view.locator("#session-id").inner_text()
    reopened = sized.open(f"chat/concierge/{session}")
    reopened.reload()  # a new page: nothing of the live view is left
    reopened.wait_for_selector("#transcript .msg.assistant")
    kept = reopened.locator("#transcript .msg.assistant")
    expect(kept.locator('.approval[data-call-id="call-paris"] .approval-outcome')).to_have_text("Approved.")
    expect(kept.locator('.approval[data-call-id="call-rome"] .approval-outcome')).to_have_text(
        "Rejected: one city is enough"
    )
    expect(kept.locator(".approval button")).to_have_count(0)
    _shot(sized, "approval-reopened")


def _paused_run(base_url: str) -> tuple[str, str]:
    """A concierge run waiting for a decision on one booking, sent over the API (so the console
    learns of it only from what the server lists); its session and run ids."""
    session = f"waiting-{uuid.uuid4().hex[:8]}"
    body = {"message": "Book Paris", "session_id": session}
    answer: Any = api(base_url, "POST", "/api/agents/concierge/run", body)
    assert answer["status"] == "awaiting_approval", answer
    return session, answer["correlation_id"]


def test_a_run_awaiting_approval_is_listed_and_decided_in_the_session_view(
    sized: BrowserPage, model: ModelServer
) -> None:
    model.script(Reply.tool_call("book_hotel", BOOK, call_id="call-1"), Reply.text("Booked."))
    session, run = _paused_run(sized.base_url)
    view = sized.open("sessions/concierge")
    row = view.locator("#sessions-table tbody tr").filter(has_text=session)
    expect(row).to_contain_text("Book Paris")
    expect(row).to_contain_text("0 + 1 in progress")
    _shot(sized, "sessions-waiting")
    view.goto(f"{sized.base_url}/api/console/#/runs/concierge")
    runs = view.locator("#recent-runs tbody tr").filter(has_text=run)
    expect(runs.locator(".badge")).to_have_text("awaiting_approval")
    view.goto(f"{sized.base_url}/api/console/#/sessions/concierge/{session}")
    turn = view.locator(f'#turns-table tbody tr[data-run="{run}"]')
    expect(turn.locator(".badge")).to_have_text("awaiting_approval")
    box = view.locator('#session-approvals .approval[data-call-id="call-1"]')
    expect(box.locator(".approval-arguments")).to_contain_text('"Paris"')
    expect(box.locator("button.reject")).to_be_visible()
    _shot(sized, "session-waiting")
    _no_sideways_scroll(view)
    box.locator("button.approve").click()
    expect(turn.locator(".badge")).to_have_text("succeeded", timeout=30_000)
    expect(view.locator("#session-approvals")).to_have_count(0)
    _shot(sized, "session-decided")


def test_a_run_awaiting_approval_is_decided_in_a_reopened_chat(
    sized: BrowserPage, model: ModelServer
) -> None:
    model.script(Reply.tool_call("book_hotel", BOOK, call_id="call-1"), Reply.text("Booked."))
    session, run = _paused_run(sized.base_url)
    view = sized.open(f"chat/concierge/{session}")
    waiting = view.locator('#transcript .approval[data-call-id="call-1"]')
    expect(waiting.locator("button.approve")).to_be_visible()
    expect(view.locator("#transcript .msg.user")).to_contain_text("Book Paris")
    _shot(sized, "chat-reopened-waiting")
    waiting.locator("button.reject").click()
    done = view.locator("#transcript .msg.assistant:not(.live)")
    expect(done.locator(".markdown")).to_contain_text("Booked.")
    expect(done.locator(".approval-outcome")).to_have_text("Rejected.")
    expect(done.locator(".usage a")).to_have_text(run)
    _shot(sized, "chat-reopened-decided")


def test_a_run_awaiting_approval_is_decided_in_the_run_view(sized: BrowserPage, model: ModelServer) -> None:
    model.script(Reply.tool_call("book_hotel", BOOK, call_id="call-1"), Reply.text("Booked."))
    session, run = _paused_run(sized.base_url)
    view = sized.open(f"runs/concierge/{session}/{run}")
    expect(view.locator("#run-status")).to_have_text("awaiting_approval")
    waiting = view.locator('#run-view .approval[data-call-id="call-1"]')
    expect(waiting.locator(".approval-arguments")).to_contain_text('"Paris"')
    _shot(sized, "run-waiting")
    _no_sideways_scroll(view)
    waiting.locator("button.approve").click()
    expect(view.locator("#run-status")).to_have_text("succeeded", timeout=30_000)
    expect(view.locator("#run-view .markdown")).to_contain_text("Booked.")
    expect(view.locator("#run-view .approval .approval-outcome")).to_have_text("Approved.")
