"""Hash routes the console has no view for: a malformed %-escape or an unknown section shows the
not-found view, never a blank page or an uncaught error."""

from __future__ import annotations

import pytest
from console_support import BrowserPage
from playwright.sync_api import expect

from agents.testing import ModelServer


@pytest.mark.parametrize("route", ["%E0%A4%A", "chat/%E0%A4%A", "sessions/assistant/%", "no-such-view"])
def test_a_route_without_a_view_shows_not_found(page: BrowserPage, model: ModelServer, route: str) -> None:
    view = page.open(route)
    expect(view.locator("main h2")).to_have_text("Page not found")
    expect(view.locator("#not-found a")).to_have_attribute("href", "#/agents")
    assert not page.errors, page.errors
    # The way out works: the link leads to a view.
    view.click("#not-found a")
    expect(view.locator("main h2")).to_have_text("Agents")
