"""What idle expiry leaves behind in the task hub, side by side with an earlier checkout, in one run.

For each tree (``--baseline DIR``, e.g. ``git archive <commit> | tar -x -C /tmp/before``, then
this one), a child process hosts an app with one agent on the local host, plants ``--sessions``
sessions idle since 2020 (TTL 4 s, so a sweep every 0.2 s), starts the agent's sweeper and
prints how long until every session expired, the host process's CPU time, and the instances and
history rows left in the task hub once the sweeps went quiet (the sweeper's own instance
included). The child measures only through the local host's own store, whatever the tree.

Usage: .venv/bin/python bench/expiry_bench.py --baseline /tmp/before [--sessions 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
SETTLE_SECONDS = 20.0  # after the last expiry: time for later sweeps to purge what is finished


def _counts(db: pathlib.Path) -> tuple[int, int, int]:
    """(sessions, instances, history rows) in the local host's store."""
    with sqlite3.connect(db) as conn:
        sessions = conn.execute("SELECT COUNT(*) FROM entity_states").fetchone()[0]
        instances = conn.execute("SELECT COUNT(*) FROM orch_instances").fetchone()[0]
        history = conn.execute("SELECT COUNT(*) FROM orch_history").fetchone()[0]
    return int(sessions), int(instances), int(history)


async def _child(tree: pathlib.Path, sessions: int) -> None:
    sys.path.insert(0, str(tree))
    import azure.durable_functions as df

    from agents import Agent, ModelSettings
    from devhost import LocalHost
    from hosting import build_app
    from hosting.lifecycle import SWEEPER, sweeper_instance
    from state import AgentState, dump_state

    state = AgentState.new()
    state.last_activity_at = "2020-01-01T00:00:00+00:00"
    text = dump_state(state)
    with tempfile.TemporaryDirectory() as tmp:
        app = build_app([Agent(name="assistant", model=ModelSettings(model="m", base_url="http://127.0.0.1:9"))])
        host = LocalHost(app, pathlib.Path(tmp) / "data", project_dir=tree)
        await host.start()
        try:
            with sqlite3.connect(host.db_path) as conn:
                conn.executemany(
                    "INSERT INTO entity_states (entity_id, name, key, state, last_operation_at)"
                    " VALUES (?, ?, ?, ?, 0)",
                    [(f"@dafx-assistant@s{n:05d}", "dafx-assistant", f"s{n:05d}", text)
                     for n in range(sessions)],
                )
            client = df.DurableOrchestrationClient(host.client_binding())
            cpu, wall = time.process_time(), time.monotonic()
            spec = {"agent": "assistant", "intervalSeconds": 0.2}
            await client.start_new(SWEEPER, sweeper_instance("assistant"), spec)
            while _counts(host.db_path)[0] > 0:
                await asyncio.sleep(0.2)
            expired_in, expiry_cpu = time.monotonic() - wall, time.process_time() - cpu
            settle = time.monotonic() + SETTLE_SECONDS
            while time.monotonic() < settle and _counts(host.db_path)[1] > 1:
                await asyncio.sleep(0.5)
            _, instances, history = _counts(host.db_path)
            print(f"{sessions} expiries in {expired_in:.1f} s (host CPU {expiry_cpu:.1f} s); "
                  f"left {instances} instances, {history} history rows", flush=True)
        finally:
            await host.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", type=pathlib.Path, help="a checkout of the earlier code")
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--child", type=pathlib.Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        asyncio.run(_child(args.child, args.sessions))
        return
    trees = ([("before", args.baseline.resolve())] if args.baseline else []) + [("this tree", ROOT)]
    env = {**os.environ, "PYTHON_ENABLE_INIT_INDEXING": "1", "DURABLE_AGENTS_ALLOW_MODEL_REQUESTS": "0",
           "DURABLE_AGENTS_SESSION_TTL": "4"}
    for label, tree in trees:
        done = subprocess.run(
            [sys.executable, str(ROOT / "bench" / "expiry_bench.py"), "--child", str(tree),
             "--sessions", str(args.sessions)],
            cwd=tree, env={**env, "PYTHONPATH": str(tree)}, capture_output=True, text=True, timeout=1800,
            check=False,
        )
        lines = done.stdout.strip().splitlines() or [f"failed: {done.stderr.strip().splitlines()[-3:]}"]
        print(f"{label}: {lines[-1]}", flush=True)


if __name__ == "__main__":
    main()
