"""Function keys: the page asks for the key, sends it as x-functions-key, and says clearly when
it is wrong. The page itself never holds a key."""

from __future__ import annotations

import urllib.request

from console_support import CONSOLE_PATH, BrowserPage
from e2e_support import FUNCTION_KEY
from playwright.sync_api import expect

from agents.testing import ModelServer, Reply


def test_the_page_works_after_entering_the_key_and_says_when_it_is_wrong(
    keyed_page: BrowserPage, model: ModelServer
) -> None:
    page = keyed_page
    # The console's files are anonymous and contain no key.
    for asset in ("", "js/api.js", "js/main.js"):
        with urllib.request.urlopen(f"{page.base_url}{CONSOLE_PATH}{asset}", timeout=10) as response:
            assert response.status == 200
            assert FUNCTION_KEY.encode() not in response.read()

    view = page.page
    view.goto(f"{page.base_url}{CONSOLE_PATH}#/agents")
    dialog = view.locator("#key-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("requires a function key (401 Unauthorized)")
    expect(view.locator("#notice")).to_contain_text("requires a function key")

    view.get_by_role("textbox", name="Function key").fill("not-the-key")
    view.get_by_role("button", name="Use this key").click()
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("The function key was refused (401 Unauthorized)")
    page.shot("key-refused")

    view.get_by_role("textbox", name="Function key").fill(FUNCTION_KEY)
    view.get_by_role("button", name="Use this key").click()
    expect(dialog).to_be_hidden()
    expect(view.locator(".cards .card")).to_have_count(4)
    expect(view.locator("#key-button")).to_have_text("Function key ✓")
    # Kept for this tab only, and sent on every API call from now on.
    assert view.evaluate("Object.values(sessionStorage)") == [FUNCTION_KEY]
    assert view.evaluate("localStorage.length") == 0
    model.script(Reply.text("Keyed hello."))
    view.goto(f"{page.base_url}{CONSOLE_PATH}#/chat/assistant")
    view.fill("#message", "hi")
    view.click("#send")
    expect(view.locator("#transcript .msg.assistant:not(.live) .markdown")).to_have_text("Keyed hello.")
    assert not [u for u in page.requests if "code=" in u], "the key must travel in a header, not the URL"
