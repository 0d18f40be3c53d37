"""The worker's thread pool for sync functions is the runtime's own, sized as in Azure: by
`PYTHON_THREADPOOL_THREAD_COUNT`, and unset by the runtime's default, `min(32, cores + 4)` (what
an app deployed without the setting gets; docs/devhost.md "Threads"). In a fresh interpreter each:
the pool is process-wide and the suite sets the setting for itself."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROBE = """
import azure_functions_runtime as runtime
from devhost.worker import _runtime
_runtime.start_threads()
print(runtime.get_threadpool_executor()._max_workers)
"""
SETTING = "PYTHON_THREADPOOL_THREAD_COUNT"


def _pool_size(**env: str) -> int:
    clean = {k: v for k, v in os.environ.items() if k != SETTING}
    done = subprocess.run([sys.executable, "-c", PROBE], env={**clean, **env}, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip().splitlines()[-1])


def test_without_the_setting_the_pool_is_the_runtimes_default() -> None:
    cpus = getattr(os, "process_cpu_count", os.cpu_count)()
    assert _pool_size() == min(32, (cpus or 1) + 4)


def test_the_setting_sizes_it() -> None:
    assert _pool_size(**{SETTING: "7"}) == 7
