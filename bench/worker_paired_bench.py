"""A 1-session waiting turn through the local host with its worker process, side by side with
another checkout of the host, in one run robust to the machine's drift.

Two `python -m devhost` processes (this tree and `--base`, e.g. a worktree of main), each with one
worker process (`FUNCTIONS_WORKER_PROCESS_COUNT` 1) and the project's `function_app.py`, both alive
at once, their model a local `ModelServer` answering at once. The parent alternates short blocks of
waiting turns (`POST /api/agents/assistant/run`, `wait_for_response` true, one at a time on one
session per host) between them, which one goes first alternating, and takes the ratio of each
back-to-back pair of blocks: two blocks a second apart see the same machine, so the drift of a
machine shared with other work cancels out. Besides the wall time, the CPU time per turn of the
host and of its worker process, each from the process's own accounting (Linux /proc/<pid>/stat:
user plus system time), which other processes' load hardly moves.

One session throughout grows to ~1,200 entries, its older ones archived (a ~48 KB live state: the
JSON work of each read weighs); `--fresh` starts each block on a new session (a short history: the
fixed cost of each turn weighs).

`--turns 60 --fresh` is one session of 60 turns per block.

In the flex topology (`--topology flex`) "worker" is both worker processes (HTTP and Durable).

Usage: .venv/bin/python bench/worker_paired_bench.py --base DIR [--turns 20] [--blocks 30] [--fresh]
       [--topology flex]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DURABLE_AGENTS_ALLOW_MODEL_REQUESTS", "0")

import aiohttp  # noqa: E402
from host_bench import Host, post_run  # noqa: E402

from agents.testing import ModelRequest, ModelServer, Reply  # noqa: E402


async def block(
    http: aiohttp.ClientSession, host: Host, session: str, turns: int
) -> tuple[list[float], float, float]:
    """``turns`` waiting turns one after another: each one's milliseconds, and the host's and the
    worker's CPU ms per turn."""
    host_cpu, worker_cpu = host.cpu_split()
    walls = [(await post_run(http, host.url, session, f"turn {i}")).latency_ms for i in range(turns)]
    host_after, worker_after = host.cpu_split()
    return walls, (host_after - host_cpu) * 1000 / turns, (worker_after - worker_cpu) * 1000 / turns


async def bench(hosts: dict[str, Host], turns: int, blocks: int, fresh: bool) -> None:
    names = list(hosts)
    walls: dict[str, list[float]] = {n: [] for n in names}
    cpus: dict[str, list[float]] = {n: [] for n in names}
    host_cpus: dict[str, list[float]] = {n: [] for n in names}
    worker_cpus: dict[str, list[float]] = {n: [] for n in names}
    ratio_p50: list[float] = []
    ratio_cpu: list[float] = []
    ratio_worker: list[float] = []
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http:
        for name in names:  # warm-up: the worker's first turns create its clients
            await block(http, hosts[name], "bench", 10)
        for b in range(blocks):
            order = names if b % 2 == 0 else names[::-1]
            session = f"bench-{b}" if fresh else "bench"
            got = {name: await block(http, hosts[name], session, turns) for name in order}
            for name in names:
                walls[name] += got[name][0]
                host_cpus[name].append(got[name][1])
                worker_cpus[name].append(got[name][2])
                cpus[name].append(got[name][1] + got[name][2])
            ratio_p50.append(statistics.median(got["this"][0]) / statistics.median(got["base"][0]))
            ratio_cpu.append(cpus["this"][-1] / cpus["base"][-1])
            ratio_worker.append(got["this"][2] / got["base"][2])
    for name in names:
        w = sorted(walls[name])
        p90 = w[int(0.9 * (len(w) - 1))]
        print(f"{name:>5}: {len(w)} turns  p50 {statistics.median(w):.1f} ms  p90 {p90:.1f} ms"
              f"  CPU per turn (median of blocks): worker {statistics.median(worker_cpus[name]):.2f} ms"
              f"  host {statistics.median(host_cpus[name]):.2f} ms"
              f"  both {statistics.median(cpus[name]):.2f} ms")
    print("this/base, median of the paired blocks' ratios:"
          f" p50 {100 * (statistics.median(ratio_p50) - 1):+.1f}%"
          f"  worker CPU per turn {100 * (statistics.median(ratio_worker) - 1):+.1f}%"
          f"  host+worker CPU per turn {100 * (statistics.median(ratio_cpu) - 1):+.1f}%;"
          f" whole run's CPU {100 * (sum(cpus['this']) / sum(cpus['base']) - 1):+.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base", type=pathlib.Path, required=True, help="the other checkout")
    parser.add_argument("--turns", type=int, default=20, help="turns per block")
    parser.add_argument("--blocks", type=int, default=30, help="blocks per host")
    parser.add_argument("--topology", choices=("single", "flex"), default="single",
                        help="flex: HTTP and Durable functions in separate worker processes")
    parser.add_argument("--fresh", action="store_true",
                        help="each block on a new session (0 to 2 x turns entries), not one that grows")
    args = parser.parse_args()

    def answer(request: ModelRequest) -> Reply:
        return Reply.text("ok")

    print(f"worker_paired_bench {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC,"
          f" load {os.getloadavg()[0]:.1f};"
          f" {args.blocks} blocks of {args.turns} turns per host, alternating,"
          f" {'a new session per block' if args.fresh else 'one session throughout'},"
          f" topology {args.topology}")
    env = {"FUNCTIONS_WORKER_PROCESS_COUNT": "1", "DEVHOST_TOPOLOGY": args.topology}
    with ModelServer(mode="scripted") as model, tempfile.TemporaryDirectory() as tmp:
        model.handler = answer
        hosts: dict[str, Host] = {}
        try:
            for name, tree in (("base", args.base.resolve()), ("this", ROOT)):
                scratch = pathlib.Path(tmp) / name
                scratch.mkdir()
                hosts[name] = Host(
                    scratch / "data", model.base_url, scratch / "host.log", extra_env=env, tree=tree
                )
                hosts[name].start()
            asyncio.run(bench(hosts, args.turns, args.blocks, args.fresh))
        finally:
            for host in hosts.values():
                host.stop()


if __name__ == "__main__":
    main()
