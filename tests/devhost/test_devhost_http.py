"""HTTP triggers over real sockets: routing, methods, params, prefix, keys, errors."""

from __future__ import annotations

import asyncio
import json
import pathlib
import time

import aiohttp
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devhost import LocalHost, RouteTemplateError
from devhost.functions._routes import compile_route

GUID = "9b2f2a52-6c55-4d3c-8a53-3c8b0a1f0a77"


async def test_route_params_and_optional_segment(host: LocalHost, http: aiohttp.ClientSession) -> None:
    async with http.get(f"{host.url}/api/items/42") as r:
        assert r.status == 200
        assert await r.json() == {"route": {"id": "42"}, "method": "GET"}
    async with http.post(f"{host.url}/api/items/42/blue") as r:
        assert await r.json() == {"route": {"id": "42", "label": "blue"}, "method": "POST"}


async def test_int_constraint_and_literal_precedence(host: LocalHost, http: aiohttp.ClientSession) -> None:
    async with http.get(f"{host.url}/api/items/special") as r:
        assert await r.json() == {"special": True}
    async with http.get(f"{host.url}/api/items/notanint/x") as r:
        assert r.status == 404
        assert r.content_type == "application/problem+json"


async def test_sync_function_gets_real_request(host: LocalHost, http: aiohttp.ClientSession) -> None:
    async with http.get(f"{host.url}/API/Hello/World%20Wide") as r:
        assert r.status == 200
        assert await r.text() == "hello World Wide"
        assert r.headers["Content-Type"] == "text/plain; charset=utf-8"


async def test_response_is_returned_as_is(host: LocalHost, http: aiohttp.ClientSession) -> None:
    async with http.post(f"{host.url}/api/echo?a=1&b=two", data=b"\x00raw bytes",
                         headers={"X-Custom": "yes"}) as r:
        assert r.status == 201
        assert await r.read() == b"\x00raw bytes"
        assert r.headers["Content-Type"] == "application/octet-stream"
        assert json.loads(r.headers["X-Echo-Query"]) == {"a": "1", "b": "two"}
        assert r.headers["X-Echo-Header"] == "yes"
        assert r.headers["X-Echo-Url"] == f"{host.url}/api/echo?a=1&b=two"


async def test_a_repeated_query_key_reaches_the_function_as_the_host_passes_it(host: LocalHost) -> None:
    """The Functions host fills RpcHttp.query from ASP.NET Core's query collection: a repeated key's
    values joined with commas (StringValues.ToString), and a key without a value left out; the
    headers likewise, joined."""
    query = "user_id=bob&user_id=alice&empty=&bare&a=1&user_id=carol"
    headers = [("X-Custom", "one"), ("x-custom", "two")]  # httpx sends both (aiohttp's client keeps one)
    async with httpx.AsyncClient() as client:
        r = await client.post(f"{host.url}/api/echo?{query}", content=b"", headers=headers)
    assert r.status_code == 201
    assert json.loads(r.headers["X-Echo-Query"]) == {"user_id": "bob,alice,carol", "a": "1"}
    assert r.headers["X-Echo-Url"] == f"{host.url}/api/echo?{query}"
    assert r.headers["X-Echo-Header"] == "one,two"  # a repeated header's values, joined


async def test_method_not_declared(host: LocalHost, http: aiohttp.ClientSession) -> None:
    # As the Functions host: 404 for a route that exists with other methods (no 405 at all).
    async with http.delete(f"{host.url}/api/echo") as r:
        assert r.status == 404
        assert r.content_type == "application/problem+json"
        assert (await r.json())["allowed"] == ["POST", "PUT"]


async def test_unknown_route_and_missing_prefix(host: LocalHost, http: aiohttp.ClientSession) -> None:
    for path in ("/api/nothing/here", "/hello/bob", "/api"):
        async with http.get(host.url + path) as r:
            assert r.status == 404, path
    async with http.get(host.url + "/") as r:  # the landing page, like the Functions host's
        assert r.status == 200
        assert "hello" in await r.text()

    # Found by the API fuzzer: a path with an encoded newline missed the catch-all route and got
    # aiohttp's plain-text 404 instead of the host's problem answer (or the function).
    async with http.get(f"{host.url}/api/nothing%0Ahere") as r:
        assert r.status == 404 and r.content_type == "application/problem+json"
    async with http.get(f"{host.url}/api/hello/a%0Ab") as r:
        assert r.status == 200
        assert await r.text() == "hello a\nb"


async def test_unhandled_exception_is_500(host: LocalHost, http: aiohttp.ClientSession,
                                          caplog: pytest.LogCaptureFixture) -> None:
    async with http.get(f"{host.url}/api/boom") as r:
        assert r.status == 500
        assert (await r.json())["code"] == "function_failed"
    assert any("function boom failed" in rec.getMessage() for rec in caplog.records)


async def test_route_prefix_from_host_json(tmp_path: pathlib.Path, http: aiohttp.ClientSession) -> None:
    (tmp_path / "host.json").write_text(json.dumps(
        {"version": "2.0", "extensions": {"http": {"routePrefix": "v1/x"}}}))
    server = LocalHost("basic_app", tmp_path / "d", project_dir=tmp_path, function_key="")
    await server.start()
    try:
        async with http.get(f"{server.url}/v1/x/hello/a") as r:
            assert await r.text() == "hello a"
        async with http.get(f"{server.url}/api/hello/a") as r:
            assert r.status == 404
    finally:
        await server.stop()


async def test_empty_route_prefix(tmp_path: pathlib.Path, http: aiohttp.ClientSession) -> None:
    (tmp_path / "host.json").write_text(json.dumps({"extensions": {"http": {"routePrefix": ""}}}))
    server = LocalHost("basic_app", tmp_path / "d", project_dir=tmp_path, function_key="")
    await server.start()
    try:
        async with http.get(f"{server.url}/hello/a") as r:
            assert await r.text() == "hello a"
    finally:
        await server.stop()


async def test_function_keys(tmp_path: pathlib.Path, http: aiohttp.ClientSession) -> None:
    server = LocalHost("basic_app", tmp_path / "d", project_dir=tmp_path, function_key="s3cret")
    await server.start()
    try:
        async with http.get(f"{server.url}/api/secure") as r:
            assert r.status == 401
            assert r.content_type == "application/problem+json"
        async with http.get(f"{server.url}/api/secure?code=wrong") as r:
            assert r.status == 401
        async with http.get(f"{server.url}/api/secure?code=s3cret") as r:
            assert r.status == 200
            assert await r.text() == "secret"
        async with http.get(f"{server.url}/api/secure", headers={"x-functions-key": "s3cret"}) as r:
            assert r.status == 200
        async with http.get(f"{server.url}/api/hello/anon") as r:  # anonymous route
            assert r.status == 200
        # The webhook URLs need the key too and the binding hands it out.
        binding = json.loads(server.client_binding())
        assert binding["requiredQueryStringParameters"] == "code=s3cret"
        status_url = binding["managementUrls"]["statusQueryGetUri"]
        assert "code=s3cret" in status_url
        async with http.get(f"{server.webhook_base_url}entities/counter/k") as r:
            assert r.status == 401
        async with http.get(f"{server.webhook_base_url}entities/counter/k?code=s3cret") as r:
            assert r.status == 404
    finally:
        await server.stop()


async def test_env_key(tmp_path: pathlib.Path, http: aiohttp.ClientSession,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEVHOST_FUNCTION_KEY", "from-env")
    server = LocalHost("basic_app", tmp_path / "d", project_dir=tmp_path)
    await server.start()
    try:
        async with http.get(f"{server.url}/api/secure?code=from-env") as r:
            assert r.status == 200
        async with http.get(f"{server.url}/api/secure") as r:
            assert r.status == 401
    finally:
        await server.stop()


@pytest.mark.parametrize(
    ("template", "path", "expected"),
    [
        ("a/{b}", "a/x", {"b": "x"}),
        ("a/{b}", "a/x/y", None),
        ("a/{b:alpha}", "a/x1", None),
        ("a/{b:guid}", f"a/{GUID}", {"b": GUID}),
        ("a/{b:minlength(3)}", "a/xy", None),
        ("a/{b:range(1,5)}", "a/5", {"b": "5"}),
        ("a/{b:range(1,5)}", "a/6", None),
        ("a/{b:bool}", "a/TRUE", {"b": "TRUE"}),
        ("a/{b=dflt}", "a", {"b": "dflt"}),
        ("files/{*path}", "files/x/y/z", {"path": "x/y/z"}),
        ("a/{b:regex(^v[0-9]+$)}", "a/v12", {"b": "v12"}),
        ("a/{b:regex(^v[0-9]+$)}", "a/w12", None),
        ("{x}.{y}", "f.txt", {"x": "f", "y": "txt"}),
    ],
)
def test_route_templates(template: str, path: str, expected: dict[str, str] | None) -> None:
    assert compile_route(template).match(path) == expected


@pytest.mark.parametrize("template", ["a/{b:nosuch}", "a/{b", "a/{1x}"])
def test_bad_route_templates(template: str) -> None:
    with pytest.raises(RouteTemplateError):
        compile_route(template)


async def test_port_in_use_fails_cleanly(host: LocalHost, tmp_path: pathlib.Path) -> None:
    other = LocalHost("basic_app", tmp_path / "other", port=host.port, project_dir=tmp_path)
    with pytest.raises(OSError):
        await other.start()
    # Refused before any worker or store started: the port is held first, so that no worker's
    # own HTTP server can take it while the host starts.
    assert other.workers is None and other.entities is None
    again = LocalHost("basic_app", tmp_path / "other", port=0, project_dir=tmp_path)
    await again.start()  # the database it opened is usable again
    await again.stop()


async def test_bad_app_target(tmp_path: pathlib.Path) -> None:
    from devhost import AppLoadError

    # A package module is no script file: the worker imports the app from <name>.py.
    with pytest.raises(AppLoadError, match=r"script file json\.py"):
        await LocalHost("json", tmp_path / "d", project_dir=tmp_path).start()
    # A script without a FunctionApp: the runtime's own message.
    (tmp_path / "noapp.py").write_text("VALUE = 1\n")
    with pytest.raises(AppLoadError, match=r"Could not find top level function app instances in noapp\.py"):
        await LocalHost("noapp", tmp_path / "d", project_dir=tmp_path).start()


async def test_a_function_the_runtime_refuses_stops_startup_with_its_message(tmp_path: pathlib.Path) -> None:
    """The worker fails the whole metadata request at the first function it cannot load; so does
    the host's startup, with the runtime's message naming the function."""
    from devhost import AppLoadError

    (tmp_path / "refused_app.py").write_text(
        "from typing import Any\n"
        "import azure.functions as func\n"
        "import azure.durable_functions as df\n"
        "app = df.DFApp()\n"
        "@app.activity_trigger(input_name='spec')\n"
        "def tally(spec: dict[str, Any]) -> int:\n"
        "    return 1\n"
    )
    with pytest.raises(AppLoadError, match="cannot load the tally function") as raised:
        await LocalHost("refused_app", tmp_path / "d", project_dir=tmp_path).start()
    assert "invalid non-type annotation" in str(raised.value)


async def test_stop_does_not_wait_long_for_in_flight_requests(tmp_path: pathlib.Path) -> None:
    import asyncio
    import time

    server = LocalHost("basic_app", tmp_path / "d", project_dir=tmp_path, function_key="")
    await server.start()
    async with aiohttp.ClientSession() as http:
        pending = asyncio.ensure_future(http.get(f"{server.url}/api/slow/30"))
        await asyncio.sleep(0.2)
        started = time.monotonic()
        await server.stop()
        assert time.monotonic() - started < 10
        with pytest.raises(aiohttp.ClientError):
            await pending


_SEGMENT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.~", min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), _SEGMENT), min_size=1, max_size=5))
def test_route_params_round_trip(parts: list[tuple[bool, str]]) -> None:
    """Any path built for a template of literals and {params} matches with exactly those values."""
    template, path, expected = [], [], {}
    for index, (is_param, value) in enumerate(parts):
        if is_param:
            template.append(f"{{p{index}}}")
            expected[f"p{index}"] = value
        else:
            template.append(value)
        path.append(value)
    route = compile_route("/".join(template))
    assert route.match("/".join(path)) == expected
    assert route.match("/".join([*path, "extra"])) is None


async def test_a_path_the_runtimes_http_server_refuses_does_not_hold_the_connection(
    tmp_path: pathlib.Path,
) -> None:
    """The runtime's HTTP streams server (FastAPI) answers a path segment holding an encoded
    newline itself, before the function runs, so the invocation never answers: the host sends that
    answer on and stops waiting, and the next request on the same connection is served."""
    server = LocalHost("stream_app", tmp_path / "d", project_dir=tmp_path, function_key="")
    await server.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        started = time.monotonic()
        for path in ("/api/echo/a%0Ab", "/api/echo/fine"):
            writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode())
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length")))
            body = await asyncio.wait_for(reader.readexactly(length), 20)
            if path.endswith("fine"):
                assert head.startswith(b"HTTP/1.1 200") and body == b"fine"
            else:
                assert head.startswith(b"HTTP/1.1 404") and body == b'{"detail":"Not Found"}'
        assert time.monotonic() - started < 15
        writer.close()
    finally:
        await server.stop()
