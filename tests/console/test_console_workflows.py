"""The review workflow in the console: it waits for a person, who approves the draft in the page."""

from __future__ import annotations

import json

from console_support import BrowserPage
from playwright.sync_api import expect

from agents.testing import ModelRequest, ModelServer, Reply, offline_reply


def test_a_workflow_waits_for_approval_and_completes_after_approving_in_the_page(
    page: BrowserPage, model: ModelServer
) -> None:
    def handler(request: ModelRequest) -> Reply:
        # The reviewer asks for structured output; the writer for text.
        if request.response_format is not None:
            return Reply.json({"approved": True, "feedback": "Clear and *short*."})
        return Reply.text("Espresso, **pulled fresh** every morning.")

    model.handler = handler
    view = page.open("workflows")
    view.get_by_label("Topic of a new review workflow").fill("our espresso")
    view.get_by_role("button", name="Start review").click()
    expect(view.locator("#workflow-stage")).to_have_text("awaiting_approval", timeout=20_000)
    expect(view.locator("#workflow-status")).to_have_text("Running")
    expect(view.locator("#workflow-detail .markdown strong")).to_have_text("pulled fresh")
    expect(view.locator("#workflow-topic")).to_have_text("our espresso")
    instance_id = view.url.rsplit("/", 1)[-1]
    expect(view.locator("#workflows-table").get_by_role("link", name=instance_id)).to_be_visible()
    row = view.locator("#workflows-table tbody tr").filter(has=view.get_by_role("link", name=instance_id))
    expect(row.locator("td.topic")).to_have_text("our espresso")
    page.shot("workflow-waiting")
    calls = len(model.requests)
    view.wait_for_timeout(500)
    assert len(model.requests) == calls  # nothing happens until a person decides

    view.get_by_label("Comment (optional)").fill("Ship it")
    view.get_by_role("button", name="Approve draft").click()
    expect(view.locator("#workflow-status")).to_have_text("Completed", timeout=20_000)
    expect(view.locator("#workflow-stage")).to_have_text("done")
    output = json.loads(view.locator("#workflow-output").inner_text())
    assert output["status"] == "approved" and output["comment"] == "Ship it"
    assert output["draft"] == "Espresso, **pulled fresh** every morning."
    assert output["topic"] == "our espresso"
    expect(view.locator("#workflow-topic")).to_have_text("our espresso")
    expect(view.locator("#approval-form")).to_have_count(0)
    expect(view.locator("#workflow-decision")).to_have_text("Outcome: approved — “Ship it”")
    page.shot("workflow-completed")


def test_the_offline_review_keeps_its_topic(page: BrowserPage, model: ModelServer) -> None:
    # The offline model (what `make run` uses with no model configured) answers the last message
    # only and its reviewer never approves: each revision must still say what the piece is about.
    model.handler = offline_reply
    view = page.open("workflows")
    view.get_by_label("Topic of a new review workflow").fill("the night train to Vienna")
    view.get_by_role("button", name="Start review").click()
    expect(view.locator("#workflow-stage")).to_have_text("awaiting_approval", timeout=30_000)
    expect(view.locator("#workflow-topic")).to_have_text("the night train to Vienna")
    expect(view.locator("#workflow-detail .markdown").first).to_contain_text("the night train to Vienna")
    writer = [r.last_user_text for r in model.requests if r.response_format is None]
    assert len(writer) == 3 and all("the night train to Vienna" in (text or "") for text in writer), writer
