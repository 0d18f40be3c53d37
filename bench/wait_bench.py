"""How fast `POST /api/agents/{agent}/run` sees a finished turn, and what one poll costs.

Runs the app's real HTTP function against a local host and the local model server:

* end-to-end latency of a waiting run with a zero-delay model (fresh session, 1,000-entry session);
* with a model that takes 200 ms, how long after the model answered the HTTP answer came
  (the waiting overhead the backoff adds);
* the cost of one poll read (durable client read + finding the run) at 10 and 1,000 entries of a
  state holding its whole history (1.2.0 style), and at 10 to 100,000 entries of sessions built
  with archiving (1.3.0: the state holds the recent part; the poll reads only that).

Usage: .venv/bin/python bench/wait_bench.py
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DURABLE_AGENTS_ALLOW_MODEL_REQUESTS", "0")
os.environ.setdefault("PYTHON_ENABLE_INIT_INDEXING", "1")  # build_app needs it, as Azure does

import azure.durable_functions as df  # noqa: E402
import azure.functions as func  # noqa: E402
from state_bench import build_archived  # noqa: E402

from agents import Agent, ModelSettings, RetryPolicy  # noqa: E402
from agents.testing import ModelServer, Reply  # noqa: E402
from devhost import LocalHost  # noqa: E402
from hosting import build_app  # noqa: E402
from hosting.client._read import read_session  # noqa: E402
from state import AgentRequest, AgentResponse, AgentState, ChatMessage, TextContent, dump_state  # noqa: E402


def _history(turns: int) -> str:
    state = AgentState.new()
    for i in range(turns):
        cid = f"c{i}"
        state.append_request(
            AgentRequest(
                correlation_id=cid,
                messages=[ChatMessage(role="user", contents=[TextContent(text="q" * 200)])],
            )
        )
        state.append_response(
            AgentResponse(
                correlation_id=cid,
                messages=[ChatMessage(role="assistant", contents=[TextContent(text="a" * 300)])],
            )
        )
    return dump_state(state)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main() -> None:
    with ModelServer(mode="scripted") as server, tempfile.TemporaryDirectory() as tmp:
        settings = ModelSettings(model="m", base_url=server.base_url, retry=RetryPolicy(max_attempts=1))
        app = build_app([Agent(name="assistant", model=settings)])
        run = next(f for f in app.get_functions() if f.get_function_name() == "agent_run").get_user_function()
        host = LocalHost(app, pathlib.Path(tmp) / "data", project_dir=ROOT)
        await host.start()
        binding = host.client_binding()

        async def post(session: str, message: str = "hi") -> tuple[int, float]:
            body = json.dumps({"message": message, "session_id": session}).encode()
            req = func.HttpRequest(
                "POST",
                "http://localhost/api/agents/assistant/run",
                body=body,
                headers={"Content-Type": "application/json"},
                route_params={"agent": "assistant"},
            )
            started = time.perf_counter()
            response = await run(req=req, client=binding)
            return response.status_code, (time.perf_counter() - started) * 1000

        def plant(session: str, text: str) -> None:
            import sqlite3

            conn = sqlite3.connect(host.db_path)
            with conn:
                conn.execute(
                    "INSERT INTO entity_states VALUES (?, ?, ?, ?, 0)",
                    (f"@dafx-assistant@{session}", "dafx-assistant", session, text),
                )
            conn.close()

        try:
            server.handler = lambda request: Reply.text("ok")
            for label, turns in (("fresh session", 0), ("1,000-entry session", 500)):
                session = f"bench-{turns}"
                if turns:
                    plant(session, _history(turns))
                await post(session)  # warm up
                times = []
                for _ in range(30):
                    status, ms = await post(session)
                    assert status == 200, status
                    times.append(ms)
                print(
                    f"POST run, zero-delay model, {label:>20}: p50 {statistics.median(times):6.1f} ms"
                    f"  p99 {_pct(times, 0.99):6.1f} ms"
                )

            server.handler = lambda request: Reply.delay(0.2, then=Reply.text("ok"))
            overheads = []
            for i in range(10):
                _, ms = await post(f"slow-{i}")
                overheads.append(ms - 200)
            print(
                f"POST run, 200 ms model: answer {statistics.median(overheads):.1f} ms (p50) after the"
                " model's delay (includes the turn's own work)"
            )

            client = df.DurableOrchestrationClient(binding)
            for turns in (5, 500):
                session = f"read-{turns}"
                plant(session, _history(turns))
                entity = df.EntityId("dafx-assistant", session)
                times = []
                for _ in range(30):
                    started = time.perf_counter()
                    snapshot = await read_session(client, entity)
                    snapshot.stored.find_run(f"c{turns - 1}")
                    times.append((time.perf_counter() - started) * 1000)
                size = len(_history(turns)) // 1024
                print(
                    f"one poll read at {2 * turns:>5} entries ({size:>4} KB):"
                    f" p50 {statistics.median(times):5.2f} ms"
                )
            for entries in (10, 1_000, 10_000, 100_000):
                session = f"archived-{entries}"
                text, _ = build_archived(entries)
                plant(session, text)
                entity = df.EntityId("dafx-assistant", session)
                last = f"{entries // 2 - 1:032x}"
                times = []
                for _ in range(30):
                    started = time.perf_counter()
                    snapshot = await read_session(client, entity)
                    assert snapshot.stored.find_run(last) is not None
                    times.append((time.perf_counter() - started) * 1000)
                print(
                    f"one poll read, archived session of {entries:>7,} entries "
                    f"({len(text) // 1024:>3} KB state): p50 {statistics.median(times):5.2f} ms"
                )
        finally:
            await host.stop()


if __name__ == "__main__":
    asyncio.run(main())
