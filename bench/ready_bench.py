"""Time to ready of `python -m devhost` serving the project's `function_app.py`, as `make run` starts it.

Starts the host `--runs` times (the offline model, as `make run`), and prints the time from the
process's start to its first answer on `/api/health` and the startup time the host itself logs
("devhost ready on ... in N s"), with `FUNCTIONS_WORKER_PROCESS_COUNT` as the environment gives it.

Usage: .venv/bin/python bench/ready_bench.py [--runs 5]
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


def once(tmp: pathlib.Path) -> tuple[float, float]:
    port = _free_port()
    log = tmp / f"host-{port}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_OPENAI_"))}
    env.update(PYTHONPATH=str(ROOT), PYTHON_ENABLE_INIT_INDEXING="1", PYTHON_THREADPOOL_THREAD_COUNT="300")
    started = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "devhost", "--port", str(port), "--data-dir", str(tmp / f"d{port}"),
             "--startup-hook", "agents.testing:start_offline_model_if_unconfigured"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    workers = os.environ.get("FUNCTIONS_WORKER_PROCESS_COUNT", "1")
    with tempfile.TemporaryDirectory() as tmp:
        results = [once(pathlib.Path(tmp)) for _ in range(args.runs)]
    answered = [a for a, _ in results]
    logged = [b for _, b in results]
    print(f"time to ready, {args.runs} runs, {workers} worker process(es) ({ROOT.name}):")
    print(f"  first answer on /api/health: median {statistics.median(answered):.2f} s "
          f"(min {min(answered):.2f}, max {max(answered):.2f})")
    print(f"  host's own 'ready' line:     median {statistics.median(logged):.2f} s")


if __name__ == "__main__":
    main()
