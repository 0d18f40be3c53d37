"""``python -m devhost`` as a process: startup, reset, SIGTERM, kill -9 and redelivery."""

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
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pytest

from devhost import DevHostError
from devhost._main import reset_data_dir

REPO = pathlib.Path(__file__).resolve().parents[2]
APPS = pathlib.Path(__file__).parent / "apps"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Proc:
    def __init__(self, popen: subprocess.Popen[bytes], port: int, log: pathlib.Path) -> None:
        self.popen = popen
        self.url = f"http://127.0.0.1:{port}"
        self.log = log

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


def _env(model: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT", "DEVHOST_FUNCTION_KEY")}
    if not model:
        # A loopback placeholder: configured, so no model server starts, and nothing is called.
        env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"
    # What `make run` names; the hook itself leaves a configured model alone.
    env["DEVHOST_STARTUP_HOOK"] = "agents.testing:start_offline_model_if_unconfigured"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(APPS)])
    return env


@contextmanager
def devhost(tmp: pathlib.Path, *extra: str, model: bool = False, name: str = "run",
            app: str = "basic_app") -> Iterator[Proc]:
    port = _free_port()
    log = tmp / f"{name}.log"
    with open(log, "wb") as out:
        popen = subprocess.Popen(
            [sys.executable, "-m", "devhost", "--app", app, "--port", str(port),
             "--data-dir", str(tmp / "data"), *extra],
            cwd=tmp, env=_env(model), stdout=out, stderr=subprocess.STDOUT,
        )
    proc = Proc(popen, port, log)
    try:
        yield proc
    finally:
        if popen.poll() is None:
            popen.kill()
        popen.wait(10)


def _request(method: str, url: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw.strip().startswith((b"{", b"[")) else raw
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def _wait_ready(proc: Proc, timeout: float = 60) -> float:
    # A readiness wait (it costs time only when the host fails to start): a loaded machine running
    # the suite in parallel can take longer than a request's 10 s to answer a host's first request.
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if proc.popen.poll() is not None:
            raise AssertionError(f"devhost exited early:\n{proc.output()}")
        try:
            if _request("GET", f"{proc.url}/api/hello/ready")[0] == 200:
                return time.monotonic() - started
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.02)
    raise AssertionError(f"devhost did not become ready:\n{proc.output()}")


def _wait_state(proc: Proc, key: str, predicate: Any, timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        status, body = _request("GET", f"{proc.url}/api/counter/{key}")
        state = body.get("state") if status == 200 else None
        if predicate(state):
            return state
        if time.monotonic() > deadline:
            raise AssertionError(f"state never matched, last {state!r}\n{proc.output()}")
        time.sleep(0.05)


def test_startup_and_sigterm(tmp_path: pathlib.Path) -> None:
    with devhost(tmp_path) as proc:
        elapsed = _wait_ready(proc)
        print(f"devhost process ready (first HTTP 200) after {elapsed:.2f}s")
        proc.popen.send_signal(signal.SIGTERM)
        assert proc.popen.wait(15) == 0
        out = proc.output()
    assert "devhost ready on" in out
    assert "function keys are not enforced" in out
    assert "hello: [GET]" in out and "/api/hello/{name}" in out
    assert "GET /api/hello/ready -> 200" in out
    assert "stopping" in out
    assert "every_five_minutes: timerTrigger functions are not run by the local host" in out


def test_sigterm_with_a_running_operation_exits_promptly(tmp_path: pathlib.Path) -> None:
    marker = tmp_path / "marker.txt"
    with devhost(tmp_path) as proc:
        _wait_ready(proc)
        slow = {"sleep": 60, "item": "slow", "marker": str(marker)}
        assert _request("POST", f"{proc.url}/api/counter/k/slow_append", slow)[0] == 202
        deadline = time.monotonic() + 10
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        started = time.monotonic()
        proc.popen.send_signal(signal.SIGTERM)
        assert proc.popen.wait(20) == 0
        print(f"stopped {time.monotonic() - started:.1f}s after SIGTERM with an operation running")
        assert "abandoning 1 running function call(s)" in proc.output()


def test_kill_9_mid_operation_redelivers_once(tmp_path: pathlib.Path) -> None:
    marker = tmp_path / "marker.txt"
    with devhost(tmp_path, name="first") as proc:
        _wait_ready(proc)
        assert _request("POST", f"{proc.url}/api/counter/k/add", 1)[0] == 202
        _wait_state(proc, "k", lambda s: s is not None and s["total"] == 1)
        slow = {"sleep": 2, "item": "slow", "marker": str(marker)}
        assert _request("POST", f"{proc.url}/api/counter/k/slow_append", slow)[0] == 202
        assert _request("POST", f"{proc.url}/api/counter/k/append", "after")[0] == 202
        # Wait for the line, not the file: open(..., "a") creates it before the write lands.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (marker.exists() and marker.read_text()):
            time.sleep(0.02)
        assert marker.read_text() == "started\n"
        proc.popen.send_signal(signal.SIGKILL)
        proc.popen.wait(10)

    with devhost(tmp_path, name="second") as proc:
        _wait_ready(proc)
        state = _wait_state(proc, "k", lambda s: s is not None and "after" in s["log"])
        assert state == {"total": 1, "log": [1, "slow", "after"]}
        # The interrupted operation ran again (at-least-once execution) but committed once.
        assert marker.read_text() == "started\nstarted\n"
        time.sleep(0.3)
        assert _wait_state(proc, "k", lambda s: s is not None) == state
        assert "redelivering pending operations of 1 entity" in proc.output()


def test_reset_wipes_data_only_when_asked(tmp_path: pathlib.Path) -> None:
    with devhost(tmp_path, name="first") as proc:
        _wait_ready(proc)
        _request("POST", f"{proc.url}/api/counter/keep/add", 3)
        _wait_state(proc, "keep", lambda s: s is not None)
        proc.popen.send_signal(signal.SIGINT)
        assert proc.popen.wait(15) == 0
    with devhost(tmp_path, name="second") as proc:
        _wait_ready(proc)
        assert _wait_state(proc, "keep", lambda s: s is not None)["total"] == 3
        proc.popen.send_signal(signal.SIGTERM)
        proc.popen.wait(15)
    with devhost(tmp_path, "--reset", name="third") as proc:
        _wait_ready(proc)
        assert _request("GET", f"{proc.url}/api/counter/keep")[0] == 404
        assert "--reset: deleted" in proc.output()


def test_reset_refuses_foreign_directory(tmp_path: pathlib.Path) -> None:
    (tmp_path / "precious.txt").write_text("do not delete")
    with pytest.raises(DevHostError):
        reset_data_dir(tmp_path)
    assert (tmp_path / "precious.txt").exists()
    assert reset_data_dir(tmp_path / "missing") is False


def test_offline_model_server_line(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("agents.testing")
    with devhost(tmp_path, model=True) as proc:
        _wait_ready(proc)
        out = proc.output()
    assert "no model configured: using the offline model server at http://127.0.0.1:" in out


def test_startup_hook_runs_before_the_app_and_stops_with_the_host(tmp_path: pathlib.Path) -> None:
    marker = tmp_path / "hook-calls.txt"
    (tmp_path / "project_hook.py").write_text(
        "import os, pathlib, sys\n"
        f"MARKER = pathlib.Path({str(marker)!r})\n"
        "class Started:\n"
        "    def stop(self):\n"
        "        MARKER.write_text(MARKER.read_text() + 'stopped\\n')\n"
        "def start():\n"
        "    MARKER.write_text('started app_imported=%s\\n' % ('basic_app' in sys.modules))\n"
        "    return Started()\n"
    )
    with devhost(tmp_path, "--startup-hook", "project_hook:start", name="hook") as proc:
        _wait_ready(proc)
        proc.popen.send_signal(signal.SIGTERM)
        assert proc.popen.wait(15) == 0
    assert marker.read_text() == "started app_imported=False\nstopped\n"


@pytest.mark.parametrize("spec", ["no_colon", "no_such_hook_module:start", "json:no_such_function"])
def test_bad_startup_hook_exits_with_message(tmp_path: pathlib.Path, spec: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "devhost", "--app", "basic_app", "--port", "0",
         "--data-dir", str(tmp_path / "d"), "--startup-hook", spec],
        cwd=tmp_path, env=_env(False), capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 2
    assert "startup hook" in result.stderr and spec.partition(":")[0] in result.stderr
    assert not (tmp_path / "d").exists()


def test_bad_app_exits_with_message(tmp_path: pathlib.Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "devhost", "--app", "no_such_app_module", "--port", "0",
         "--data-dir", str(tmp_path / "d")],
        cwd=tmp_path, env=_env(False), capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 2
    assert "cannot load app module 'no_such_app_module'" in result.stderr


def test_a_busy_port_is_refused_before_any_worker_starts_saying_how_to_pick_another(
    tmp_path: pathlib.Path,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        result = subprocess.run(
            [sys.executable, "-m", "devhost", "--app", "basic_app", "--port", str(port),
             "--data-dir", str(tmp_path / "d")],
            cwd=tmp_path, env=_env(False), capture_output=True, text=True, timeout=60,
        )
    assert result.returncode == 2
    assert f"port {port} on 127.0.0.1 is already in use" in result.stderr, result.stderr
    assert "--port N" in result.stderr and "make run ARGS='--port N'" in result.stderr
    assert "worker" not in result.stderr, result.stderr


def test_reload_serves_the_changed_app_and_stops_with_its_host(tmp_path: pathlib.Path) -> None:
    app = tmp_path / "reload_app.py"
    app.write_text((APPS / "basic_app.py").read_text())
    with devhost(tmp_path, "--reload", app="reload_app", name="reload") as proc:
        _wait_ready(proc, timeout=60)
        assert _request("GET", f"{proc.url}/api/hello/you") == (200, b"hello you")
        app.write_text(app.read_text().replace('f"hello {', 'f"hi again {'))
        deadline = time.monotonic() + 60
        answer: tuple[int, Any] = (0, None)
        while time.monotonic() < deadline and answer != (200, b"hi again you"):
            with suppress(urllib.error.URLError, ConnectionError):
                answer = _request("GET", f"{proc.url}/api/hello/you")
            time.sleep(0.1)
        assert answer == (200, b"hi again you"), proc.output()
        assert "--reload: reload_app.py changed" in proc.output()
        proc.popen.send_signal(signal.SIGTERM)
        assert proc.popen.wait(30) == 0
    # The host it started has stopped too: nothing answers on its port.
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        _request("GET", f"{proc.url}/api/hello/you")


@pytest.mark.parametrize(
    ("host_json", "env", "named"),
    [
        ({"extensions": {"durableTask": {"hubName": "my-hub"}}}, {}, "'my-hub'"),
        ({"extensions": {"durableTask": {"hubName": "%NO_SUCH_HUB_SETTING%"}}}, {}, "NO_SUCH_HUB_SETTING"),
        ({}, {"DEVHOST_ORCHESTRATION_DELAY_SECONDS": "soon"}, "DEVHOST_ORCHESTRATION_DELAY_SECONDS"),
    ],
)
def test_a_task_hub_or_delay_azure_would_refuse_stops_the_host(
    tmp_path: pathlib.Path, host_json: dict[str, Any], env: dict[str, str], named: str
) -> None:
    (tmp_path / "host.json").write_text(json.dumps({"version": "2.0", **host_json}))
    environment = {k: v for k, v in _env(False).items() if k != "NO_SUCH_HUB_SETTING"}
    result = subprocess.run(
        [sys.executable, "-m", "devhost", "--app", "basic_app", "--port", "0",
         "--data-dir", str(tmp_path / "d")],
        cwd=tmp_path, env={**environment, **env}, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert named in result.stderr, result.stderr[-2000:]


def test_the_host_loads_its_parts_while_its_workers_start() -> None:
    """What stands between `make run` and its worker's start loads nothing it can load later: the
    --reload watcher's entry point and `LocalHost` itself import no HTTP server, durable backend or
    runtime types; `start()` loads them on a thread while the workers import the app."""
    heavy = ("aiohttp", "azure.functions", "devhost.durable_api", "devhost.entities",
             "devhost.orchestrations", "devhost.mcp", "watchfiles")
    code = (
        "import sys\n"
        "import devhost._main, devhost._host, devhost._reload\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=REPO).stdout.strip()
    assert out == "[]"
