"""How the app serves the console: types, caching, the security policy, and nothing but its own
files; plus the vendored libraries matching the lockfile, and the page at phone width."""

from __future__ import annotations

import http.client
import json
import pathlib
import re
import time
from urllib.parse import urlsplit

import pytest
from console_support import CONSOLE_PATH, REPO, BrowserPage, api
from e2e_support import HostProcess
from playwright.sync_api import expect

from agents.testing import ModelServer, Reply
from hosting.console import CONTENT_SECURITY_POLICY
from hosting.console._vendor import differences


def _get(host: HostProcess, path: str, headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    parts = urlsplit(host.url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    connection.request("GET", path, headers=headers or {})  # the path goes out exactly as given
    response = connection.getresponse()
    response.read()
    return response


@pytest.mark.parametrize(
    ("asset", "media_type"),
    [
        ("", "text/html; charset=utf-8"),
        ("js/main.js", "text/javascript; charset=utf-8"),
        ("vendor/purify.es.mjs", "text/javascript; charset=utf-8"),
        ("console.css", "text/css; charset=utf-8"),
        ("favicon.svg", "image/svg+xml"),
    ],
)
def test_assets_have_their_type_a_strict_policy_and_an_etag(
    console_host: HostProcess, asset: str, media_type: str
) -> None:
    first = _get(console_host, CONSOLE_PATH + asset)
    assert first.status == 200
    assert first.headers["Content-Type"] == media_type
    assert first.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert "script-src 'self'" in CONTENT_SECURITY_POLICY and "unsafe-inline" not in CONTENT_SECURITY_POLICY
    assert "img-src 'self' data:" in CONTENT_SECURITY_POLICY
    assert first.headers["X-Content-Type-Options"] == "nosniff"
    assert first.headers["Cache-Control"] == "no-cache"
    etag = first.headers["ETag"]
    assert etag.startswith('"') and etag.endswith('"')
    again = _get(console_host, CONSOLE_PATH + asset, {"If-None-Match": etag})
    assert again.status == 304 and again.headers["ETag"] == etag
    changed = _get(console_host, CONSOLE_PATH + asset, {"If-None-Match": '"something-else"'})
    assert changed.status == 200


def test_the_host_prints_the_console_url_at_startup(console_host: HostProcess) -> None:
    # The listing follows the moment the host starts answering: give it a moment.
    line = f"console: [GET] {console_host.url}/api/console/ (and everything below it)"
    deadline = time.monotonic() + 10
    while line not in console_host.log() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert line in console_host.log()


def test_the_bare_path_redirects_to_the_page(console_host: HostProcess) -> None:
    answer = _get(console_host, "/api/console")
    assert answer.status == 308 and answer.headers["Location"] == "console/"


@pytest.mark.parametrize(
    "path",
    [
        "/api/console/nope.js",
        "/api/console/../function_app.py",
        "/api/console/%2e%2e/function_app.py",
        "/api/console/..%2f..%2fhost.json",
        "/api/console/js/../../_assets.py",
        "/api/console/%2Fetc%2Fpasswd",
        "/api/console/index.html%00.js",
    ],
)
def test_only_the_consoles_own_files_are_served(console_host: HostProcess, path: str) -> None:
    parts = urlsplit(console_host.url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    connection.request("GET", path)
    response = connection.getresponse()
    body = response.read()
    assert response.status in (404, 400), (path, response.status, body[:200])
    assert b"def " not in body and b"root:" not in body and b"extensionBundle" not in body
    if response.status == 404 and response.headers.get("Content-Type", "").startswith("application/problem"):
        assert json.loads(body)["code"] in ("console_asset_not_found", "not_found", "route_not_found")


def test_the_console_is_not_in_the_api_document(console_host: HostProcess) -> None:
    answer = _get(console_host, "/api/openapi.json")
    assert answer.status == 200
    parts = urlsplit(console_host.url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    connection.request("GET", "/api/openapi.json")
    document = json.loads(connection.getresponse().read())
    assert not [p for p in document["paths"] if "console" in p]
    assert "/api/agents/{agent}/sessions" in document["paths"]


def test_the_vendored_libraries_match_the_lockfile() -> None:
    node_modules = REPO / "node_modules"
    assert (node_modules / "dompurify" / "package.json").exists(), (
        "node_modules is missing: `make services` (.ci/services.sh) runs `npm ci` from package-lock.json"
    )
    lock = json.loads((REPO / "package-lock.json").read_text())
    versions = json.loads((REPO / "hosting/console/static/vendor/versions.json").read_text())
    for name, version in versions.items():
        assert lock["packages"][f"node_modules/{name}"]["version"] == version
    assert differences(node_modules) == [], "run `make console-assets` and commit the result"


def test_no_inline_script_or_style_in_the_page() -> None:
    page = (REPO / "hosting/console/static/index.html").read_text()
    scripts = re.findall(r"<script[^>]*>(.*?)</script>", page, re.S)
    assert scripts == [""], "only <script type=module src=...> with no inline body"
    assert not re.search(r"\son[a-z]+\s*=", page), "no inline event handlers"
    static = pathlib.Path(REPO / "hosting/console/static")
    for source in [*static.glob("*.html"), *static.glob("js/**/*.js")]:
        text = source.read_text()
        assert "style=" not in text and "eval(" not in text and "new Function" not in text, source


def test_phone_width_and_keyboard(phone: BrowserPage, model: ModelServer) -> None:
    model.script(Reply.text("A *short* answer that fits on a phone."))
    view = phone.open("agents")
    expect(view.locator(".cards .card")).to_have_count(4)
    concierge = view.locator(".card", has_text="A travel concierge")
    expect(concierge).to_contain_text("get_weather — Get today's weather for a city")
    expect(concierge).to_contain_text("memory, conversations, history-reducer")
    assert view.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    phone.shot("phone-agents")
    # Keyboard only: the first Tab reaches the skip link, which moves focus to the content.
    view.keyboard.press("Tab")
    expect(view.locator("a.skip")).to_be_focused()
    view.keyboard.press("Enter")  # a hash change: the view is routed again under the focus
    expect(view.locator("#main")).to_be_focused()
    view.goto(f"{phone.base_url}{CONSOLE_PATH}#/chat/assistant")
    view.get_by_label("Message").fill("hello from a phone")
    view.get_by_label("Message").press("Enter")
    expect(view.locator("#transcript .msg.assistant:not(.live) em")).to_have_text("short")
    assert view.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    phone.shot("phone-chat")


def test_every_module_is_preloaded_by_the_page() -> None:
    # The page lists each module it imports, so the browser fetches them in parallel; a module
    # added without a preload still works, but slower: keep the list complete.
    static = REPO / "hosting/console/static"
    page = (static / "index.html").read_text()
    preloaded = set(re.findall(r'<link rel="modulepreload" href="([^"]+)">', page))
    modules = {
        p.relative_to(static).as_posix()
        for p in [*static.glob("js/**/*.js"), *static.glob("vendor/**/*.js"), *static.glob("vendor/*.mjs")]
    }
    assert preloaded == modules - {"js/main.js"}


def test_the_session_page_fits_375_px(phone: BrowserPage, model: ModelServer) -> None:
    # A remembered fact and a tool call: the state bag, the turns table and the stored JSON are
    # the widest parts of the page.
    model.script(
        Reply.tool_call("remember", {"fact": "A traveller who prefers aisle seats on long flights."}),
        Reply.text("Noted."),
    )
    body = {
        "message": "Remember my seat preference",
        "correlation_id": "a-rather-long-correlation-id-0123456789",
    }
    run = api(phone.base_url, "POST", "/api/agents/concierge/run", body)
    view = phone.page
    view.set_viewport_size({"width": 375, "height": 812})
    phone.open(f"sessions/concierge/{run['session_id']}")
    expect(view.locator("#turn-count")).to_have_text("1")
    view.locator("#session-view details").evaluate_all("all => all.forEach((d) => { d.open = true; })")
    phone.shot("phone-session")
    width = view.evaluate("[document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]")
    assert width[0] <= width[1], width
    phone.open("runs/concierge")
    expect(view.locator("#recent-runs tbody tr").first).to_be_visible()
    width = view.evaluate("[document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]")
    assert width[0] <= width[1], width
