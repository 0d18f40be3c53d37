"""MCP servers the tests start, each in a process of its own on a port the OS picks.

Run as a script (`python mcp_servers_support.py KIND LOG`), a server binds 127.0.0.1:0, prints
its port and serves until killed. `LOG` is a file of one JSON line per thing the server saw (a
tool run, a `notifications/cancelled`), which the tests read. Kinds:

* `own` (`own-sse`: the same over the older SSE transport): the SDK's own server class
  (`mcp.server.mcpserver.MCPServer`) with `append`, a tool with
  a side effect (a line in the log), and `shout`.
* `hostile`: a hand-written streamable HTTP endpoint that misbehaves on purpose: `hang` never
  answers, `fail` answers `isError`, `liar` answers structured content its declared output schema
  does not allow, `huge` answers 5 MB, `image` answers an image and a resource link.
* `elsewhere`: an SSE server whose endpoint event points at another origin.
* `time`: `mcp-server-time` (the reference time server, from PyPI), a stdio server, served over
  streamable HTTP through the SDK's client and server transports.

`McpProcess` (for the tests) starts one and stops it.
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from mcp.server.mcpserver import Context, MCPServer

HERE = pathlib.Path(__file__).resolve()


def _note(log: str, **entry: Any) -> None:
    with open(log, "a") as out:
        out.write(json.dumps(entry) + "\n")


def _own_app(log: str, sse: bool = False) -> Any:
    server = MCPServer("tests-own")

    @server.tool()
    def append(text: str, ctx: Context) -> str:
        """Append a line to the server's log."""
        request = ctx.request_context.request
        header = request.headers.get("idempotency-key") if request is not None else None
        meta = ctx.request_context.meta
        key = (
            (meta or {}).get("idempotencyKey")
            if isinstance(meta, dict)
            else getattr(meta, "idempotencyKey", None)
        )
        _note(log, event="append", text=text, header=header, meta=key)
        return f"appended {text}"

    @server.tool()
    def shout(text: str) -> str:
        """Say it loud."""
        return text.upper()

    return server.sse_app() if sse else server.streamable_http_app()


HOSTILE_TOOLS = [
    {"name": "hang", "description": "Never answers.", "inputSchema": {"type": "object"}},
    {"name": "fail", "description": "Answers an error.", "inputSchema": {"type": "object"}},
    {
        "name": "liar",
        "description": "Declares a number, answers a word.",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    },
    {"name": "huge", "description": "Answers 5 MB.", "inputSchema": {"type": "object"}},
    {"name": "image", "description": "Answers an image and a link.", "inputSchema": {"type": "object"}},
    {"name": "bad.name/with spaces", "description": "Not a tool name.", "inputSchema": {"type": "object"}},
    {
        "name": "remote_ref",
        "description": "x" * 5000,
        "inputSchema": {"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}},
    },
]


def _hostile_call(name: str) -> dict[str, Any]:
    if name == "fail":
        return {"content": [{"type": "text", "text": "the database is on fire"}], "isError": True}
    if name == "liar":
        return {"content": [{"type": "text", "text": '{"n": "many"}'}], "structuredContent": {"n": "many"}}
    if name == "huge":
        return {"content": [{"type": "text", "text": "x" * (5 * 1024 * 1024)}]}
    if name == "image":
        return {
            "content": [
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {
                    "type": "resource_link",
                    "uri": "file:///report.pdf",
                    "name": "report",
                    "mimeType": "application/pdf",
                },
            ]
        }
    return {"content": [{"type": "text", "text": "?"}], "isError": True}


def _hostile_app(log: str) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def endpoint(request: Request) -> Response:
        if request.method == "DELETE":
            return Response(status_code=200)
        if request.method != "POST":
            return Response(status_code=405)
        message = await request.json()
        method, params = message.get("method"), message.get("params") or {}
        if "id" not in message:
            if method == "notifications/cancelled":
                _note(log, event="cancelled", request=params.get("requestId"))
            return Response(status_code=202)
        result: dict[str, Any]
        if method == "initialize":
            result = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": HOSTILE_TOOLS}
        elif method == "tools/call":
            name = params.get("name")
            _note(log, event="call", name=name, request=message["id"])
            if name == "hang":
                await asyncio.sleep(3600)
            result = _hostile_call(str(name))
        else:
            return JSONResponse(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32601, "message": "no such method"},
                }
            )
        return JSONResponse(
            {"jsonrpc": "2.0", "id": message["id"], "result": result},
            headers={"mcp-session-id": "hostile-session"},
        )

    return Starlette(routes=[Route("/mcp", endpoint, methods=["GET", "POST", "DELETE"])])


def _elsewhere_app(log: str) -> Any:
    """An SSE server whose `endpoint` event sends the client to another origin (the port in the
    log file's name's sibling `elsewhere.port`), where the test listens for anyone arriving."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    port = (pathlib.Path(log).parent / "elsewhere.port").read_text().strip()

    async def sse(request: Request) -> Response:
        async def events() -> Any:
            yield f"event: endpoint\ndata: http://127.0.0.1:{port}/messages/?session_id=x\n\n"
            await asyncio.sleep(3600)

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(routes=[Route("/sse", sse)])


def _time_app(log: str) -> Any:
    """mcp-server-time (stdio) behind a streamable HTTP endpoint: each request goes to one stdio
    session of the server, started with the app."""
    import contextlib

    import mcp_types as types
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.server.lowlevel import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Mount

    upstream: dict[str, ClientSession] = {}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return await upstream["session"].list_tools()

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        _note(log, event="call", name=params.name)
        return await upstream["session"].call_tool(params.name, params.arguments or {})

    server: Server[Any] = Server("time-bridge", on_list_tools=list_tools, on_call_tool=call_tool)
    manager = StreamableHTTPSessionManager(app=server, stateless=True, json_response=True)

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> Any:
        command = str(pathlib.Path(sys.executable).with_name("mcp-server-time"))
        params = StdioServerParameters(command=command, args=["--local-timezone", "UTC"])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            upstream["session"] = session
            async with manager.run():
                yield

    return Starlette(routes=[Mount("/mcp", app=manager.handle_request)], lifespan=lifespan)


def _serve(kind: str, log: str) -> None:
    import uvicorn

    makers = {
        "own": _own_app,
        "hostile": _hostile_app,
        "time": _time_app,
        "own-sse": lambda log: _own_app(log, sse=True),
        "elsewhere": _elsewhere_app,
    }
    app = makers[kind](log)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    print(sock.getsockname()[1], flush=True)
    asyncio.run(server.serve(sockets=[sock]))


class McpProcess:
    """One of the servers above in a process of its own."""

    def __init__(self, kind: str, log: pathlib.Path) -> None:
        self.kind = kind
        self.log = log
        self.port = 0
        self.proc: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        path = {"time": "/mcp/", "own-sse": "/sse", "elsewhere": "/sse"}.get(self.kind, "/mcp")
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self, timeout: float = 30.0) -> McpProcess:
        self.log.touch()
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE), self.kind, str(self.log)],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.strip():
            raise AssertionError(f"the {self.kind} MCP server did not start")
        self.port = int(line)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:  # serving once it accepts a connection
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.05)
        raise AssertionError(f"the {self.kind} MCP server does not accept connections")

    def seen(self, event: str) -> list[dict[str, Any]]:
        """What the server logged of `event`."""
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [e for e in map(json.loads, lines) if e.get("event") == event]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def server_fixture(kind: str) -> Callable[..., Iterator[McpProcess]]:
    """A module-scoped fixture of one `kind` of server (its log in a temp dir of its own)."""

    @pytest.fixture(scope="module")
    def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpProcess]:
        process = McpProcess(kind, tmp_path_factory.mktemp(f"{kind}-mcp") / "seen.jsonl").start()
        yield process
        process.stop()

    return server


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2])
