"""What recording a turn step by step costs: the checkpoint of one step, and a 1-step turn's
latency side by side with the code before steps, in one run.

* **Checkpoint per step**: what a step adds besides its model call or tools, on a session of N
  entries: the step's operation loads the state, reads the turn in progress, and saves the state
  with the new progress (the host then commits it with the step's signal). Measured in this
  process with the `state` package and `hosting.stored.ActiveTurn` (progress: one model answer
  with a tool call and its result, as after the first two steps of a tool turn).
* **1-step turn p50**: a `run` operation of a turn without tools (one model call) through the
  app's entity function and the Durable JSON batch protocol, in-process (the SDK's batch handler,
  `hosting.build_app`), its model a local `ModelServer` answering at once, each block of turns on
  a session that grows from 10 entries. A child process per code tree, this tree and `--base` (a
  checkout of the code before steps), both alive at once: the parent alternates short blocks of
  turns between them and takes each pair of back-to-back blocks' ratio, so the machine's drift (a
  third from hour to hour, far more under load) cancels out. Besides the wall time, the child
  process's CPU time (`time.process_time`: the model server's thread is in it, the same in both
  trees), which other processes' load hardly moves.

Usage: .venv/bin/python bench/turn_steps_bench.py --base DIR [--turns 20] [--blocks 60]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DURABLE_AGENTS_ALLOW_MODEL_REQUESTS", "0")

# The child's code: only what both trees have (build_app, the agents, the SDK's batch handler).
PROBE = r"""
import json, os, statistics, sys, time, uuid
sys.path.insert(0, os.getcwd())
os.environ["DURABLE_AGENTS_ALLOW_MODEL_REQUESTS"] = "0"
os.environ["PYTHON_ENABLE_INIT_INDEXING"] = "1"
os.environ["DURABLE_AGENTS_STREAM_PATH"] = os.path.join(sys.argv[1], "streams.db")
os.environ["DURABLE_AGENTS_HISTORY_DIR"] = os.path.join(sys.argv[1], "history")
from agents import Agent, ModelSettings, RetryPolicy
from agents.testing import ModelServer, Reply
from devhost import list_functions
from hosting import build_app

with ModelServer(mode="scripted") as server:
    server.handler = lambda request: Reply.text("ok")
    settings = ModelSettings(
        model="m", base_url=server.base_url, api_key="k", retry=RetryPolicy(max_attempts=1)
    )
    app = build_app([Agent(name="bench", instructions="Be brief.", model=settings)], console=False)
    handle = {f.get_function_name(): f for f in list_functions(app)}["dafx-bench"].get_user_function()
    state = None
    done = 0
    def turn():
        global state, done
        done += 1
        op = {"correlationId": uuid.uuid4().hex, "messages": [{"role": "user", "text": f"hello {done}"}]}
        operation = {"id": str(done), "name": "run", "signal": True, "input": json.dumps(json.dumps(op))}
        request = {"self": {"name": "dafx-bench", "key": "s"}, "exists": state is not None,
                   "state": state, "batch": [operation]}
        wall, cpu = time.perf_counter(), time.process_time()
        out = json.loads(handle(json.dumps(request)))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        assert json.loads(out["results"][0]["result"])["status"] == "succeeded", out
        state = out["entityState"]
        return wall, cpu
    for _ in range(5):
        turn()  # seed 10 entries, warm up
    seed = state
    print("ready", flush=True)
    # One block of turns per line read; the parent alternates blocks between the code trees.
    # Each block starts again from the 10 seeded entries, so every block measures the same sizes.
    for line in sys.stdin:
        state = seed
        block = [turn() for _ in range(int(line))]
        print(json.dumps({"wall": [w for w, _ in block], "cpu": [c for _, c in block]}), flush=True)
"""


class Tree:
    """A child process running 1-step turns on one code tree, a block at a time."""

    def __init__(self, tree: pathlib.Path, scratch: pathlib.Path) -> None:
        scratch.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_OPENAI_"))}
        self.process = subprocess.Popen(
            [sys.executable, "-c", PROBE, str(scratch)],
            cwd=tree, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        assert self.process.stdin and self.process.stdout
        self.stdin, self.stdout = self.process.stdin, self.process.stdout
        if self.stdout.readline().strip() != "ready":
            raise SystemExit(f"{tree}: the probe did not start")

    def block(self, turns: int) -> dict[str, list[float]]:
        self.stdin.write(f"{turns}\n")
        self.stdin.flush()
        figures: dict[str, list[float]] = json.loads(self.stdout.readline())
        return figures

    def close(self) -> None:
        self.stdin.close()
        self.process.wait(timeout=30)


def checkpoint_ms(entries: int, repeats: int = 200) -> float:
    """p50 of one step's checkpoint (load, read the turn in progress, save) at `entries` entries."""
    from agents import InputMessage, TurnProgress, TurnRequest
    from hosting.stored import ActiveTurn, active_turn
    from state import AgentRequest, AgentResponse, ChatMessage, TextContent, dump_state, load_state

    state = load_state(dump_state(_history(entries, AgentRequest, AgentResponse, ChatMessage, TextContent)))
    request = TurnRequest(correlation_id="bench", messages=[InputMessage("user", "what is the weather?")])
    progress = TurnProgress(
        steps=2,
        messages=[
            {"role": "assistant", "contents": [
                {"$type": "functionCall", "callId": "c1", "name": "weather", "arguments": {"city": "Oslo"}},
            ]},
            {"role": "tool", "contents": [{"$type": "functionResult", "callId": "c1", "result": {"t": 21}}]},
        ],
        rounds=1,
    )
    state.active_turn = ActiveTurn(request, progress, "2026-11-26T00:00:00+00:00", 7).to_json()
    text = dump_state(state)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        loaded = load_state(text)
        turn = active_turn(loaded)
        assert turn is not None
        loaded.active_turn = ActiveTurn(turn.request, turn.progress, turn.started_at, 9).to_json()
        dump_state(loaded)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def _history(entries: int, request_cls, response_cls, message_cls, text_cls):  # type: ignore[no-untyped-def]
    from state import AgentState

    state = AgentState.new()
    for i in range(entries // 2):
        cid = f"c{i}"
        text = f"message {i} " + "lorem ipsum dolor sit amet " * 20
        state.append_request(request_cls(
            correlation_id=cid, created_at="2026-11-26T00:00:00+00:00",
            messages=[message_cls(role="user", contents=[text_cls(text=text)])],
        ))
        state.append_response(response_cls(
            correlation_id=cid, created_at="2026-11-26T00:00:01+00:00",
            messages=[message_cls(role="assistant", contents=[text_cls(text=text)])],
        ))
    return state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=pathlib.Path, required=True, help="the code before steps")
    parser.add_argument("--turns", type=int, default=20, help="turns per block")
    parser.add_argument("--blocks", type=int, default=60, help="blocks per tree")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    print("checkpoint per step (load + read the turn in progress + save), p50 of 200:")
    for entries in (10, 100, 1000):
        print(f"  {entries:>5} entries: {checkpoint_ms(entries):.3f} ms")
    print(f"1-step turn through the entity function: {args.blocks} blocks of {args.turns} turns,")
    print("alternating between the trees block by block (wall, and the child process's CPU time):")
    scratch = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"turn-steps-bench-{os.getpid()}"
    trees = {"base": Tree(args.base, scratch / "base"), "steps": Tree(ROOT, scratch / "steps")}
    times: dict[str, dict[str, list[float]]] = {name: {"wall": [], "cpu": []} for name in trees}
    ratios: dict[str, list[float]] = {"wall": [], "cpu": []}
    try:
        for b in range(args.blocks):
            names = ("base", "steps") if b % 2 == 0 else ("steps", "base")
            blocks = {name: trees[name].block(args.turns) for name in names}
            for kind in ("wall", "cpu"):
                for name in trees:
                    times[name][kind] += blocks[name][kind]
                # Two blocks run back to back see the same machine: their ratio cancels the drift.
                ratios[kind].append(
                    statistics.median(blocks["steps"][kind]) / statistics.median(blocks["base"][kind])
                )
    finally:
        for tree in trees.values():
            tree.close()
    for kind in ("wall", "cpu"):
        base = statistics.median(times["base"][kind]) * 1000
        steps = statistics.median(times["steps"][kind]) * 1000
        paired = (statistics.median(ratios[kind]) - 1) * 100
        low, high = (statistics.quantiles(ratios[kind], n=4)[i] for i in (0, 2))
        print(f"  {kind:>4} p50: before steps {base:.2f} ms, with steps {steps:.2f} ms;"
              f" median of the paired blocks' ratios {paired:+.1f}%"
              f" (quartiles {(low - 1) * 100:+.1f}% to {(high - 1) * 100:+.1f}%)")

if __name__ == "__main__":
    main()
