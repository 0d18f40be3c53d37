"""A first-deployment check: is the app at URL serving every part a user relies on?

    make smoke URL=https://<app>.azurewebsites.net KEY=<function key> [SYSTEM_KEY=...] [MCP_KEY=...]

Checks, each on one line, over the app's public HTTP API with the official MCP client:

* the health route and the OpenAPI document (every route of the agent API listed);
* the agents list, then for one agent (``--agent``, else the first):
  a JSON turn, a streamed turn (SSE to its terminal event) on the same session, the session in the
  sessions list, an MCP ``tools/list`` naming the agent's tool and a ``tools/call`` answered;
* the session sweeper running (with the Durable extension's system key, ``SYSTEM_KEY``: in Azure,
  ``durabletask_extension`` from the app's system keys; the local host takes the function key);
* a reset, then a turn on the emptied session.

The MCP endpoint takes the MCP extension's system key (``mcp_extension``; ``MCP_KEY``), the local host
the function key. Exits 1 when a check fails, with what it got.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable

import httpx
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

ROUTES = (
    "/agents",
    "/agents/{agent}/run",
    "/agents/{agent}/sessions",
    "/agents/{agent}/sessions/{session_id}",
    "/agents/{agent}/sessions/{session_id}/reset",
    "/agents/{agent}/sessions/{session_id}/history",
    "/agents/{agent}/sessions/{session_id}/runs/{correlation_id}",
    "/agents/{agent}/sessions/{session_id}/runs/{correlation_id}/stream",
)


class CheckFailed(Exception):
    pass


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise CheckFailed(what)


class Smoke:
    def __init__(self, args: argparse.Namespace) -> None:
        self.base = args.url.rstrip("/")
        self.key = args.key
        self.system_key = args.system_key or args.key
        self.mcp_key = args.mcp_key or args.key
        self.agent: str = args.agent or ""
        self.session = ""
        headers = {"x-functions-key": self.key} if self.key else {}
        timeout = httpx.Timeout(30, read=180)
        self.http = httpx.AsyncClient(base_url=self.base, headers=headers, timeout=timeout)
        self.failures = 0
        self.ran = 0

    async def check(self, name: str, step: Callable[[], Awaitable[str]]) -> None:
        started = time.monotonic()
        self.ran += 1
        try:
            detail = await step()
            print(f"ok    {name} ({time.monotonic() - started:.1f}s) {detail}")
        except (CheckFailed, httpx.HTTPError, OSError, ValueError, KeyError) as exc:
            self.failures += 1
            print(f"FAIL  {name} ({time.monotonic() - started:.1f}s): {exc}")

    async def health(self) -> str:
        answer = await self.http.get("/api/health")
        expect(answer.status_code == 200, f"/api/health answered {answer.status_code}: {answer.text[:300]}")
        return answer.text[:120]

    async def openapi(self) -> str:
        answer = await self.http.get("/api/openapi.json")
        expect(answer.status_code == 200, f"/api/openapi.json answered {answer.status_code}")
        paths = {p.removeprefix("/api") for p in answer.json().get("paths", {})}
        missing = [r for r in ROUTES if r not in paths]
        expect(not missing, f"routes missing from the OpenAPI document: {missing}")
        return f"{len(paths)} routes"

    async def agents(self) -> str:
        answer = await self.http.get("/api/agents")
        expect(answer.status_code == 200, f"/api/agents answered {answer.status_code}: {answer.text[:300]}")
        names = [a["name"] for a in answer.json()["agents"]]
        expect(bool(names), "no agents listed")
        if not self.agent:
            self.agent = names[0]
        expect(self.agent in names, f"agent {self.agent!r} is not among {names}")
        return f"{names}; checking {self.agent!r}"

    async def json_turn(self) -> str:
        answer = await self.http.post(f"/api/agents/{self.agent}/run", json={"message": "Say hello."})
        expect(answer.status_code == 200, f"a JSON turn answered {answer.status_code}: {answer.text[:300]}")
        body = answer.json()
        expect(body["status"] == "succeeded", f"the turn {body['status']}: {body.get('error')}")
        self.session = body["session_id"]
        return f"session {self.session}: {body['response']['text'][:60]!r}"

    async def streamed_turn(self) -> str:
        events: list[str] = []
        body = {"message": "Say hello again.", "session_id": self.session}
        headers = {"Accept": "text/event-stream"}
        run = f"/api/agents/{self.agent}/run"
        async with self.http.stream("POST", run, json=body, headers=headers) as answer:
            expect(answer.status_code == 200, f"a streamed turn answered {answer.status_code}")
            expect(answer.headers.get("content-type", "").startswith("text/event-stream"),
                   f"not an event stream: {answer.headers.get('content-type')}")
            async for line in answer.aiter_lines():
                if line.startswith("event:"):
                    events.append(line.partition(":")[2].strip())
                    if events[-1] in ("run.completed", "run.failed"):
                        break
        expect(bool(events) and events[-1] == "run.completed", f"events: {events}")
        expect("text.delta" in events, f"no text.delta among {events}")
        return f"{len(events)} events, {events[0]} ... {events[-1]}"

    async def sessions(self) -> str:
        answer = await self.http.get(f"/api/agents/{self.agent}/sessions")
        expect(answer.status_code == 200, f"the sessions list answered {answer.status_code}")
        ids = [s["session_id"] for s in answer.json()["sessions"]]
        expect(self.session in ids, f"session {self.session} is not in the first page of {len(ids)}")
        return f"{len(ids)} session(s) on the first page"

    async def mcp(self) -> str:
        headers = {"x-functions-key": self.mcp_key} if self.mcp_key else {}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=180)) as http,
            streamable_http_client(f"{self.base}/runtime/webhooks/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = [t.name for t in (await session.list_tools()).tools]
            expect(self.agent in tools, f"the MCP tools are {tools}")
            result = await session.call_tool(self.agent, {"query": "Say hello over MCP."})
            expect(not result.is_error, f"the tool call failed: {result.content}")
        return f"tools {tools}; the call answered"

    async def sweeper(self) -> str:
        url = f"/runtime/webhooks/durabletask/instances/dafx-sweeper-{self.agent}"
        answer = await self.http.get(url, params={"code": self.system_key} if self.system_key else None)
        # The status API answers 202 while an instance runs (the sweeper never ends), 200 once it ended.
        expect(answer.status_code in (200, 202),
               f"the sweeper's status answered {answer.status_code}: {answer.text[:200]}")
        status = answer.json().get("runtimeStatus")
        expect(status in ("Running", "Pending", "ContinuedAsNew"), f"the sweeper is {status}")
        return f"dafx-sweeper-{self.agent}: {status}"

    async def reset_then_run(self) -> str:
        answer = await self.http.post(f"/api/agents/{self.agent}/sessions/{self.session}/reset")
        expect(answer.status_code in (200, 202), f"reset answered {answer.status_code}: {answer.text[:300]}")
        again = await self.http.post(
            f"/api/agents/{self.agent}/run", json={"message": "After the reset.", "session_id": self.session}
        )
        expect(again.status_code == 200,
               f"the turn after the reset answered {again.status_code}: {again.text[:300]}")
        session = await self.http.get(f"/api/agents/{self.agent}/sessions/{self.session}")
        expect(session.status_code == 200, f"reading the session answered {session.status_code}")
        entries = session.json()["entries"]
        expect(entries == 2, f"after a reset and one turn the session holds {entries} entries, not 2")
        return "the session starts again from its next turn"

    async def run(self) -> int:
        async with self.http:
            await self.check("health", self.health)
            await self.check("OpenAPI document", self.openapi)
            await self.check("agents list", self.agents)
            if self.agent:
                await self.check("JSON turn", self.json_turn)
            if self.session:
                await self.check("streamed turn", self.streamed_turn)
                await self.check("sessions list", self.sessions)
                await self.check("MCP tools/list and tools/call", self.mcp)
                await self.check("session sweeper", self.sweeper)
                await self.check("reset, then a turn", self.reset_then_run)
        skipped = 9 - self.ran  # the checks after a failed agents list or first turn cannot run
        print(f"smoke: {self.ran - self.failures} passed, {self.failures} failed"
              + (f", {skipped} skipped" if skipped else ""))
        return 1 if self.failures or skipped else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--url", required=True, help="the app's base URL, e.g. https://<app>.azurewebsites.net")
    parser.add_argument("--key", default="", help="a function key (none for a local host without keys)")
    parser.add_argument("--system-key", default="",
                        help="the durabletask_extension system key (default: --key)")
    parser.add_argument("--mcp-key", default="", help="the mcp_extension system key (default: --key)")
    parser.add_argument("--agent", default="", help="the agent to check (default: the first listed)")
    return asyncio.run(Smoke(parser.parse_args()).run())


if __name__ == "__main__":
    sys.exit(main())
