"""`python -m devhost --reload`: serve, and start again whenever a Python file of the project changes.

The host runs as a child process; this one only watches. A change stops the child as Ctrl-C
does (SIGTERM: a running operation finishes or is redelivered, as after any restart) and starts a
new one, which imports the changed code in fresh worker processes and indexes its functions
again. State lives in the data dir, so sessions survive a reload. A child that exits by itself
(an app that no longer imports) is started again at the next change.
"""

from __future__ import annotations

import logging
import os
import pathlib
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence

log = logging.getLogger("devhost")

STOP_SECONDS = 15.0
"""How long a stopping child may take before it is killed."""
_SKIPPED = (".venv", ".git", "node_modules", ".devhost", ".azurite", "test-artifacts", "__pycache__")


def supervise(argv: Sequence[str], project: pathlib.Path, data_dir: pathlib.Path) -> int:
    """Run `python -m devhost argv` until SIGINT/SIGTERM, restarting it on each change."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    ignored = [str(project / name) for name in _SKIPPED] + [str(data_dir)]
    child = _start(argv)
    # The watcher loads once the host it starts is on its way (it is not on the way to ready).
    from watchfiles import PythonFilter, watch

    log.info("--reload: watching the Python files under %s", project)
    try:
        for changes in watch(project, watch_filter=PythonFilter(ignore_paths=ignored), stop_event=stop,
                             debounce=300, rust_timeout=500, yield_on_timeout=False, raise_interrupt=False):
            changed = sorted({os.path.relpath(path, project) for _, path in changes})
            log.info("--reload: %s changed; starting again", ", ".join(changed[:5]))
            _stop(child)
            child = _start(argv)
    finally:
        _stop(child)
    return 0


def _start(argv: Sequence[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "devhost", *argv])


def _stop(child: subprocess.Popen[bytes]) -> None:
    if child.poll() is not None:
        return
    child.send_signal(signal.SIGTERM)
    try:
        child.wait(STOP_SECONDS)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
