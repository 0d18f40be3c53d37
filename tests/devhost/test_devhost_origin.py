"""A web page cannot drive a loopback-only local host: a foreign Host (DNS rebinding) is a 421, a
foreign Origin (a cross-site request, preflighted or not) a 403, on every route."""

from __future__ import annotations

import pathlib

import aiohttp
import pytest

from devhost import LocalHost

FOREIGN_HOSTS = ["evil.example", "evil.example:7071", "127.0.0.1.evil.example", "localhost.evil.example:80",
                 "", "[::2]:7071"]
FOREIGN_ORIGINS = ["http://evil.example", "null", "http://127.0.0.1.evil.example:7071",
                   "http://localhost@evil.example", "file://"]
ROUTES = [("GET", "/api/hello/a"), ("POST", "/api/echo"), ("POST", "/api/counter/k/add"),
          ("GET", "/runtime/webhooks/durabletask/instances"), ("GET", "/")]


async def _answer(http: aiohttp.ClientSession, method: str, url: str,
                  headers: dict[str, str]) -> tuple[int, str, dict[str, str]]:
    async with http.request(method, url, data="1", headers={"Content-Type": "text/plain", **headers}) as r:
        body = await r.json(content_type=None) if r.content_type == "application/problem+json" else {}
        return r.status, r.content_type, body


@pytest.mark.parametrize(("method", "path"), ROUTES)
async def test_a_foreign_host_is_a_421_on_every_route(host: LocalHost, http: aiohttp.ClientSession,
                                                       method: str, path: str) -> None:
    for name in FOREIGN_HOSTS:
        status, kind, body = await _answer(http, method, host.url + path, {"Host": name})
        assert (status, kind) == (421, "application/problem+json"), name
        assert body["code"] == "misdirected_request", name


@pytest.mark.parametrize(("method", "path"), ROUTES)
async def test_a_foreign_origin_is_a_403_on_every_route(host: LocalHost, http: aiohttp.ClientSession,
                                                         method: str, path: str) -> None:
    for origin in FOREIGN_ORIGINS:
        status, kind, body = await _answer(http, method, host.url + path, {"Origin": origin})
        assert (status, kind) == (403, "application/problem+json"), origin
        assert body["code"] == "foreign_origin", origin


async def test_loopback_names_and_pages_are_served(host: LocalHost, http: aiohttp.ClientSession) -> None:
    for headers in ({"Host": f"localhost:{host.port}"}, {"Host": "127.0.0.1"}, {"Host": f"[::1]:{host.port}"},
                    {"Origin": f"http://localhost:{host.port}"}, {"Origin": "http://127.0.0.1:5173"},
                    {"Origin": "http://[::1]"}):
        status, _, _ = await _answer(http, "GET", host.url + "/api/hello/a", headers)
        assert status == 200, headers
    async with http.post(host.url + "/api/counter/k/add", json=1,
                         headers={"Origin": f"http://127.0.0.1:{host.port}"}) as r:
        assert r.status in (200, 202)


async def test_a_host_on_every_interface_leaves_names_to_its_key(tmp_path: pathlib.Path,
                                                                  http: aiohttp.ClientSession) -> None:
    # Exposed on purpose: reached under names it cannot know, so the function key guards it.
    server = LocalHost("basic_app", tmp_path / "d", project_dir=tmp_path, function_key="", host="0.0.0.0")
    await server.start()
    try:
        status, _, _ = await _answer(http, "GET", server.url + "/api/hello/a",
                                     {"Host": "devbox.lan:7071", "Origin": "http://devbox.lan:7071"})
        assert status == 200
    finally:
        await server.stop()
