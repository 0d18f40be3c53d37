"""The local host with its worker processes, side by side with an earlier checkout, in one run.

The machine's speed drifts from hour to hour, so a figure means something only next to the code it
is compared with, measured in the same run. This runs, alternating, for ``--rounds`` rounds:

* ``bench/ready_bench.py``: time to ready of ``python -m devhost``, as ``make run`` starts it;
* ``bench/host_bench.py --sizes 10``: 1-session turn latency and 50-session throughput;
* ``bench/hung_model_bench.py``: 200 turns each waiting 2 s on the model, and a bystander;

for the earlier checkout (``--baseline DIR``, e.g. ``git worktree add /tmp/before <commit>``) and
for this tree with ``FUNCTIONS_WORKER_PROCESS_COUNT`` 1 and 2, each with this environment's Python,
and prints each bench's own summary lines under its label.

Usage: .venv/bin/python bench/worker_bench.py --baseline /tmp/before [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
BENCHES = (
    ("ready", ["bench/ready_bench.py", "--runs", "3"], ("first answer", "'ready' line")),
    ("host", ["bench/host_bench.py", "--sizes", "10", "--turns", "60"], ("session",)),
    ("hung", ["bench/hung_model_bench.py"], ("all waiting", "reached the model", "bystander", "host CPU")),
)


def run(tree: pathlib.Path, script: list[str], workers: int, keep: tuple[str, ...]) -> list[str]:
    env = {**os.environ, "FUNCTIONS_WORKER_PROCESS_COUNT": str(workers), "PYTHONPATH": str(tree),
           "PYTHON_ENABLE_INIT_INDEXING": "1", "PYTHON_THREADPOOL_THREAD_COUNT": "300"}
    done = subprocess.run([sys.executable, *script], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=900, check=False)
    if done.returncode != 0:
        return [f"failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}"]
    return [line.rstrip() for line in done.stdout.splitlines() if any(k in line for k in keep)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", type=pathlib.Path, required=True, help="a checkout of the earlier code")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", default="ready,host,hung", help="which benches (comma-separated)")
    args = parser.parse_args()
    chosen = set(args.only.split(","))
    trees = (("before (in-process host)", args.baseline.resolve(), 1),
             ("workers: 1 process", ROOT, 1),
             ("workers: 2 processes", ROOT, 2))
    for round_ in range(1, args.rounds + 1):
        for name, script, keep in BENCHES:
            if name not in chosen:
                continue
            for label, tree, workers in trees:
                if name == "ready" and workers == 2 and tree == ROOT and round_ > 1:
                    continue
                print(f"[round {round_}] {name}: {label} (load avg {os.getloadavg()[0]:.1f})", flush=True)
                for line in run(tree, script, workers, keep):
                    print(f"    {line.strip()}", flush=True)


if __name__ == "__main__":
    main()
