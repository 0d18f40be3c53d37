"""``python -m devhost`` killed with SIGKILL in the middle of an orchestration, then restarted."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

REPO = pathlib.Path(__file__).resolve().parents[2]
APPS = pathlib.Path(__file__).parent / "apps"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spawn(tmp: pathlib.Path, name: str) -> tuple[subprocess.Popen[bytes], str, pathlib.Path]:
    port = _port()
    env = {k: v for k, v in os.environ.items() if k not in ("DEVHOST_FUNCTION_KEY", "OPENAI_API_KEY")}
    env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"  # configured, so no model server starts
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(APPS)])
    log = tmp / f"{name}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "devhost",
                "--app",
                "orch_app",
                "--port",
                str(port),
                "--data-dir",
                str(tmp / "data"),
            ],
            cwd=tmp,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return proc, f"http://127.0.0.1:{port}", log


def _request(method: str, url: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw.strip() else None
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def _until(predicate: Any, what: str, log: pathlib.Path, timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except (urllib.error.URLError, ConnectionError):
            value = None
        if value:
            return value
        time.sleep(0.03)
    raise AssertionError(f"{what} never happened:\n{log.read_text(errors='replace')}")


def test_kill_9_mid_orchestration(tmp_path: pathlib.Path) -> None:
    marker, release = tmp_path / "marker.txt", tmp_path / "release"
    files = {"marker": str(marker), "release": str(release), "key": "kill9"}

    proc, url, log = _spawn(tmp_path, "first")
    try:
        _until(lambda: _request("GET", f"{url}/api/instances/none")[0] == 404, "startup", log)
        status, body = _request("POST", f"{url}/api/orchestrators/kill_target", files)
        assert status == 202, body
        iid = body["id"]
        _until(lambda: marker.exists() and marker.read_text() == "started\n", "the activity start", log)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)

    release.touch()
    proc, url, log = _spawn(tmp_path, "second")
    try:

        def finished() -> Any:
            code, status = _request("GET", f"{url}/api/instances/{iid}")
            return status if code == 200 and status["runtimeStatus"] in ("Completed", "Failed") else None

        done = _until(finished, "completion after the restart", log)
        assert done["runtimeStatus"] == "Completed", done
        # The entity call committed before the kill is not applied again; the activity whose
        # result was lost runs once more.
        assert done["output"] == {"first": 1, "gate": "released", "total": 11}
        assert marker.read_text() == "started\nstarted\n"
        assert "resumed 1 outstanding work item" in log.read_text()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)
