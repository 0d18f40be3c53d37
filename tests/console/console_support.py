"""Helpers of the console's browser tests: a page that records what it requests, screenshots."""

from __future__ import annotations

import asyncio
import json
import pathlib
import threading
import time
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any

from playwright.sync_api import Page

from agents.testing import ModelRequest, Reply

REPO = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "console"
"""Screenshots of the main views (gitignored): look at them after a run."""
CHROMIUM = "/usr/bin/chromium"
CONSOLE_PATH = "/api/console/"


class BrowserPage:
    """A Playwright page on the console, recording every request and uncaught error."""

    def __init__(self, page: Page, base_url: str, test_name: str) -> None:
        self.page = page
        self.base_url = base_url
        self.test_name = test_name
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.console: list[str] = []
        self.dialogs: list[str] = []
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on(
            "console",
            lambda message: self.console.append(
                f"{message.type}: {message.text} [{message.location.get('url', '')}]"
            ),
        )

        def on_dialog(dialog: Any) -> None:
            # alert()/confirm() from the page would be script that ran: record and dismiss.
            self.dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", on_dialog)

    def open(self, route: str = "") -> Page:
        """Load the console at a hash route ("chat/assistant") and wait for its first view."""
        self.page.goto(f"{self.base_url}{CONSOLE_PATH}#/{route}")
        self.page.wait_for_selector("main h2")
        return self.page

    def shot(self, name: str) -> pathlib.Path:
        """A full-page screenshot under test-artifacts/console/."""
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


def api(base_url: str, method: str, path: str, body: Any = None, key: str | None = None) -> Any:
    """A direct API call (setting up data the page then shows)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{base_url}{path}", data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if key:
        request.add_header("x-functions-key", key)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


def held_until(
    release: threading.Event, reply: Reply, limit: float = 60.0
) -> Callable[[ModelRequest], Awaitable[Reply]]:
    """A model handler that answers `reply` only once the test sets `release`, so a turn stays
    live (streaming, pending) exactly as long as the test needs it to, however slow the machine.
    After `limit` seconds it answers anyway (a failed test must not leave a call hanging)."""

    async def answer(request: ModelRequest) -> Reply:
        deadline = time.monotonic() + limit
        while not release.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return reply

    return answer
