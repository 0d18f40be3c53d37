"""Fixtures of the console's browser tests: the real local host serving the real app, the
scripted model server, and Debian's Chromium driven by Playwright.

Every page records each request it makes; a test fails if any request leaves loopback (the
console must work with no network and must not let model output load anything).
"""

from __future__ import annotations

import os
import pathlib
import sys
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

E2E = pathlib.Path(__file__).resolve().parents[1] / "e2e"
if str(E2E) not in sys.path:
    sys.path.insert(0, str(E2E))

from console_support import ARTIFACTS, CHROMIUM, BrowserPage  # noqa: E402
from e2e_support import FUNCTION_KEY, HostProcess  # noqa: E402
from playwright.sync_api import Browser, Playwright, expect, sync_playwright  # noqa: E402

from agents.testing import ModelServer  # noqa: E402

LOOPBACK = {"127.0.0.1", "localhost", "[::1]", "::1"}

THROTTLE = float(os.environ.get("CONSOLE_TEST_CPU_THROTTLE", "0") or 0)
"""Run the page's CPU this many times slower (Chromium's emulation), e.g. 16 to look for timing
races: `CONSOLE_TEST_CPU_THROTTLE=16 pytest tests/console`. Unset: full speed."""

# Every `expect` waits for its condition; on CI's loaded 2-core machine a turn through Chromium,
# the host and the model can take longer than Playwright's default 5 s. A longer limit costs time
# only when a test fails.
expect.set_options(timeout=15_000)


# The driver and browser live per module: the sync API runs an event loop of its own while it is
# open, and the suite's async tests (pytest-asyncio) must not find it running after this folder.
@pytest.fixture(scope="module")
def playwright_driver() -> Iterator[Playwright]:
    """Playwright's driver for one test module (sync API: these tests run no event loop)."""
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def browser(playwright_driver: Playwright) -> Iterator[Browser]:
    """Headless Chromium from the distribution (Playwright's own download is not used)."""
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: run `make services` (.ci/services.sh)"
    chromium = playwright_driver.chromium.launch(
        executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-background-networking"]
    )
    try:
        yield chromium
    finally:
        chromium.close()


def _serve(
    model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory, name: str, key: str | None
) -> Iterator[HostProcess]:
    root = tmp_path_factory.mktemp(name)
    host = HostProcess(root / "data", model_server.base_url, root / "host.log", function_key=key).start()
    try:
        yield host
    finally:
        host.stop()


@pytest.fixture(scope="session")
def console_host(
    model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostProcess]:
    """`python -m devhost` serving function_app.py with no function key, models from the script."""
    yield from _serve(model_server, tmp_path_factory, "console-host", None)


@pytest.fixture(scope="session")
def keyed_host(model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostProcess]:
    """The same, with a function key enforced."""
    yield from _serve(model_server, tmp_path_factory, "console-keyed-host", FUNCTION_KEY)


def _page(
    browser: Browser, host: HostProcess, request: pytest.FixtureRequest, **context: object
) -> Iterator[BrowserPage]:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    ctx = browser.new_context(**context)  # type: ignore[arg-type]
    page = BrowserPage(ctx.new_page(), host.url, request.node.name)
    if THROTTLE:
        # A slower machine than this one (CI's loaded 2 cores and worse): races between the page
        # and the test show up here first.
        ctx.new_cdp_session(page.page).send("Emulation.setCPUThrottlingRate", {"rate": THROTTLE})
    try:
        yield page
        left = [url for url in page.requests if urlsplit(url).hostname not in LOOPBACK]
        assert not left, f"requests left loopback: {left}"
        assert not page.errors, f"errors in the page: {page.errors}"
        # Nothing the console itself does may trip its own policy (a violation would be a
        # feature silently broken in the browser). DOMPurify parsing hostile markup in its inert
        # document is reported by Chromium as blocked (handlers, inline styles): expected.
        violations = [
            m
            for m in page.console
            if ("Content Security Policy" in m or "Trusted Type" in m) and "/vendor/purify.es.mjs]" not in m
        ]
        assert not violations, violations
    finally:
        ctx.close()


@pytest.fixture
def page(
    browser: Browser, console_host: HostProcess, model: ModelServer, request: pytest.FixtureRequest
) -> Iterator[BrowserPage]:
    """A fresh browser context on the open host (desktop size), its requests recorded."""
    yield from _page(browser, console_host, request, viewport={"width": 1280, "height": 900})


@pytest.fixture
def phone(
    browser: Browser, console_host: HostProcess, model: ModelServer, request: pytest.FixtureRequest
) -> Iterator[BrowserPage]:
    """The same at phone width."""
    yield from _page(
        browser, console_host, request, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )


@pytest.fixture
def keyed_page(
    browser: Browser, keyed_host: HostProcess, model: ModelServer, request: pytest.FixtureRequest
) -> Iterator[BrowserPage]:
    """A fresh browser context on the host that enforces a function key."""
    yield from _page(browser, keyed_host, request, viewport={"width": 1280, "height": 900})


@pytest.fixture(params=[375, 1280], ids=["375px", "1280px"])
def sized(
    browser: Browser, console_host: HostProcess, model: ModelServer, request: pytest.FixtureRequest
) -> Iterator[BrowserPage]:
    """A fresh context at a phone's width (375 px, touch) and at a desktop's (1280 px): the layout
    tests measure the page at both."""
    width = int(request.param)
    phone = {"is_mobile": True, "has_touch": True} if width < 600 else {}
    yield from _page(browser, console_host, request, viewport={"width": width, "height": 900}, **phone)
