"""Helpers of the end-to-end tests: the real local host as a subprocess, and an HTTP client.

The host is started exactly as a developer starts it (`python -m devhost --port N --data-dir D`,
from the project root, serving the real `function_app.py`), with `OPENAI_BASE_URL` pointing at a
`ModelServer` the test controls. Everything goes over real loopback sockets.
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

import aiohttp

REPO = pathlib.Path(__file__).resolve().parents[2]
FUNCTION_KEY = "e2e-function-key"
# What `make run` names: the offline model server when the environment configures no model.
OFFLINE_MODEL_HOOK = "agents.testing:start_offline_model_if_unconfigured"
# The repository's copy of the published reference schema (the state tests use it too), so the
# reference check runs on a clean clone instead of being skipped.
REFERENCE_SCHEMA = REPO / "tests" / "state" / "fixtures" / "reference-1.1.0.schema.json"
OWN_SCHEMA = REPO / "schemas" / "durable-agent-entity-state.json"


def free_port() -> int:
    """A TCP port that was free a moment ago on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def host_env(model_base_url: str | None, function_key: str | None = FUNCTION_KEY) -> dict[str, str]:
    """The subprocess environment: our model server (None: no model configured at all),
    loopback-only model calls, no stray settings."""
    dropped = ("OPENAI_", "AZURE_OPENAI_", "DEVHOST_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    # The host's body limit as the project configures it (local.settings.sample.json, make run).
    env.update(DURABLE_AGENTS_ALLOW_MODEL_REQUESTS="0", PYTHONUNBUFFERED="1",
               FUNCTIONS_REQUEST_BODY_SIZE_LIMIT="262144")
    if model_base_url is not None:
        env.update(OPENAI_BASE_URL=model_base_url, OPENAI_API_KEY="e2e-key", OPENAI_CHAT_MODEL_ID="e2e-model")
    if function_key:
        env["DEVHOST_FUNCTION_KEY"] = function_key
    # The topology the suite runs in (`make test` runs it in both: single, and flex with two
    # worker processes per group).
    if os.environ.get("DEVHOST_TOPOLOGY"):
        env["DEVHOST_TOPOLOGY"] = os.environ["DEVHOST_TOPOLOGY"]
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


class HostProcess:
    """`python -m devhost` serving the project's `function_app.py` on a free port."""

    def __init__(
        self,
        data_dir: pathlib.Path,
        model_base_url: str | None,
        log_path: pathlib.Path,
        function_key: str | None = FUNCTION_KEY,
        cwd: pathlib.Path = REPO,
        extra_env: dict[str, str] | None = None,
        unset_env: tuple[str, ...] = (),
    ) -> None:
        self.cwd = cwd
        self.extra_env = dict(extra_env or {})
        self.unset_env = unset_env
        self.data_dir = data_dir
        self.model_base_url = model_base_url
        self.log_path = log_path
        self.function_key = function_key
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        """Everything the host printed so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def env(self) -> dict[str, str]:
        """The host's environment; its embedded stream store lives in its data directory."""
        env = host_env(self.model_base_url, self.function_key)
        env["DURABLE_AGENTS_STREAM_PATH"] = str(self.data_dir / "streams.db")
        # Archived history goes under the host's data dir, never into the repository.
        env["DURABLE_AGENTS_HISTORY_DIR"] = str(self.data_dir / "history")
        env.update(self.extra_env)
        for name in self.unset_env:  # a setting the suite sets, left out as a deployment may leave it
            env.pop(name, None)
        return env

    def start(self, timeout: float = 60.0) -> HostProcess:
        """Spawn the host and return once it answers its anonymous health route's neighbour."""
        self.port = free_port()
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "devhost", "--port", str(self.port), "--data-dir", str(self.data_dir),
                 "--startup-hook", OFFLINE_MODEL_HOOK],
                cwd=self.cwd,
                env=self.env(),
                stdout=out,
                stderr=subprocess.STDOUT,
                # A process group of its own: the host and its worker processes, which a test's
                # crash point kills together, as a power cut stops a whole instance.
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the host exited with {self.proc.returncode}:\n{self.log()}")
            try:
                # The OpenAPI route is anonymous and touches no storage: a cheap readiness probe.
                with urllib.request.urlopen(f"{self.url}/api/openapi.json", timeout=2) as resp:
                    # Serving starts a moment before the startup summary is logged (tests read it).
                    if resp.status == 200 and "devhost ready on" in self.log():
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.05)
        self.kill()
        raise AssertionError(f"the host did not start in {timeout}s:\n{self.log()}")

    def worker_pids(self, group: str = "") -> list[int]:
        """The worker processes the host started so far (from its log), oldest first."""
        found = re.findall(r"worker (\S+) started \(pid (\d+)\)", self.log())
        return [int(pid) for name, pid in found if name.startswith(group)]

    def kill(self) -> None:
        """SIGKILL: no cleanup of any kind runs in the host."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        """SIGTERM, the way Ctrl-C stops it; SIGKILL if it does not exit in time."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.kill()


@dataclass
class Answer:
    """One HTTP answer, read completely."""

    status: int
    headers: dict[str, str]
    body: bytes
    elapsed: float

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip()


class Client:
    """A tiny aiohttp wrapper that sends the function key and reads every answer whole."""

    def __init__(self, session: aiohttp.ClientSession, base_url: str, key: str | None = FUNCTION_KEY) -> None:
        self.session = session
        self.base_url = base_url
        self.key = key

    async def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        data: bytes | str | None = None,
        headers: dict[str, str] | None = None,
        key: bool = True,
    ) -> Answer:
        sent = dict(headers or {})
        if key and self.key:
            sent["x-functions-key"] = self.key
        if json_body is not None:
            data = json.dumps(json_body)
            sent.setdefault("Content-Type", "application/json")
        url = path if path.startswith("http") else self.base_url + path
        started = time.perf_counter()
        async with self.session.request(method, url, data=data, headers=sent) as resp:
            body = await resp.read()
            return Answer(
                resp.status,
                {k.lower(): v for k, v in resp.headers.items()},
                body,
                time.perf_counter() - started,
            )

    async def get(self, path: str, **kwargs: Any) -> Answer:
        return await self.request("GET", path, **kwargs)

    async def post(self, path: str, **kwargs: Any) -> Answer:
        return await self.request("POST", path, **kwargs)

    async def run(self, agent: str, message: str, session_id: str | None = None, **fields: Any) -> Answer:
        """`POST /api/agents/{agent}/run` with a JSON body."""
        body: dict[str, Any] = {"message": message, **fields}
        if session_id is not None:
            body["session_id"] = session_id
        return await self.post(f"/api/agents/{agent}/run", json_body=body)

    async def session_state(self, agent: str, session_id: str) -> dict[str, Any]:
        """`GET /api/agents/{agent}/sessions/{session}` (asserting 200)."""
        answer = await self.get(f"/api/agents/{agent}/sessions/{session_id}")
        assert answer.status == 200, (answer.status, answer.body[:500])
        result: dict[str, Any] = answer.json()
        return result


async def eventually(probe: Any, what: str, timeout: float = 20.0, interval: float = 0.05) -> Any:
    """Await ``probe()`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = await probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout}s (last: {value!r})")
        await asyncio.sleep(interval)


async def kill_at_model_call(host: HostProcess, model: Any, calls: int, what: str) -> None:
    """`kill -9` the host as the model gets its `calls`-th request (the step before it is
    committed), even when that never comes."""

    async def reached() -> bool:
        return len(model.requests) == calls

    try:
        await eventually(reached, what, timeout=30)
    finally:
        host.kill()
    assert host.proc is not None and host.proc.returncode == -9


def history(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The stored conversation history entries of a state document."""
    entries: list[dict[str, Any]] = document["data"]["conversationHistory"]
    return entries


def texts(entry: dict[str, Any]) -> list[str]:
    """The text contents of a history entry's messages, in order."""
    return [c["text"] for m in entry["messages"] for c in m["contents"] if c.get("$type") == "text"]


def schema_errors(document: Any, schema_path: pathlib.Path) -> list[str]:
    """Every validation error of ``document`` against the JSON schema at ``schema_path``."""
    import jsonschema

    schema = json.loads(schema_path.read_text())
    validator_class = jsonschema.validators.validator_for(schema)
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]
