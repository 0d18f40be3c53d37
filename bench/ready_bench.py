"""Time to ready of `python -m devhost` serving the project's `function_app.py`, as `make run` starts it.

Starts the host `--runs` times with `make run`'s command line and settings (`--reload`, the offline
model's startup hook; `--no-reload` leaves the watcher out), and prints the time from the process's
start to its first answer on `/api/health` (with the startup hook each checkout's `make run`
names) and the startup time the serving host itself logs
("devhost ready on ... in N s", from its own start: under `--reload` that is the watcher's child),
with `FUNCTIONS_WORKER_PROCESS_COUNT` as the environment gives it. `--baseline DIR` (another
checkout, e.g. a worktree of main) is started alternately with this one, in the same run.

Usage: .venv/bin/python bench/ready_bench.py [--runs 5] [--no-reload] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_hook(root: pathlib.Path) -> str:
    """The startup hook `make run` names in `root`'s Makefile (the offline model, and what else
    that checkout starts with it)."""
    found = re.search(r"--startup-hook (\S+)", (root / "Makefile").read_text())
    if found is None:
        raise SystemExit(f"{root}/Makefile: make run names no --startup-hook")
    return found.group(1)


def once(root: pathlib.Path, tmp: pathlib.Path, reload: bool) -> tuple[float, float]:
    port = _free_port()
    log = tmp / f"host-{port}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_OPENAI_"))}
    # make run's settings (Makefile): the thread pool, init indexing, the body limit, the offline
    # model's word delay.
    env.update(PYTHONPATH=str(root), PYTHON_ENABLE_INIT_INDEXING="1", PYTHON_THREADPOOL_THREAD_COUNT="300",
               FUNCTIONS_REQUEST_BODY_SIZE_LIMIT="262144", AGENTS_OFFLINE_STREAM_DELAY="0.05")
    started = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "devhost", *(["--reload"] if reload else []),
             "--startup-hook", run_hook(root),
             "--port", str(port), "--data-dir", str(tmp / f"d{port}")],
            cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"the host exited:\n{log.read_text()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2):
                    answered = time.monotonic() - started
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.01)
        while (logged := re.search(r"devhost ready on \S+ in ([0-9.]+)s", log.read_text())) is None:
            time.sleep(0.01)
        return answered, float(logged.group(1))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)


def _report(name: str, results: list[tuple[float, float]]) -> None:
    answered = [a for a, _ in results]
    logged = [b for _, b in results]
    print(f"  {name}: first answer on /api/health median {statistics.median(answered):.2f} s "
          f"(min {min(answered):.2f}, max {max(answered):.2f}); "
          f"host's own 'ready' line median {statistics.median(logged):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-reload", action="store_true", help="without make run's --reload watcher")
    parser.add_argument("--baseline", type=pathlib.Path, default=None,
                        help="another checkout, started alternately with this one")
    args = parser.parse_args()
    workers = os.environ.get("FUNCTIONS_WORKER_PROCESS_COUNT", "1")
    roots = [ROOT] if args.baseline is None else [args.baseline.resolve(), ROOT]
    results: dict[pathlib.Path, list[tuple[float, float]]] = {root: [] for root in roots}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            for root in roots:
                results[root].append(once(root, pathlib.Path(tmp), not args.no_reload))
    mode = "python -m devhost" if args.no_reload else "make run (--reload)"
    print(f"time to ready of {mode}, {args.runs} runs each, {workers} worker process(es):")
    for root in roots:
        _report(root.name, results[root])


if __name__ == "__main__":
    main()
