"""Shared fixtures for the whole suite (other packages may append theirs below).

Model requests are confined to loopback for the whole test run: the agents runtime refuses any
non-loopback model endpoint while DURABLE_AGENTS_ALLOW_MODEL_REQUESTS is "0", and model settings
from the developer's environment are removed.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

os.environ["DURABLE_AGENTS_ALLOW_MODEL_REQUESTS"] = "0"
# The app settings local.settings.sample.json gives (and Azure needs): sync functions, entity
# batches among them, take one of the Python worker's threads each, and the worker's default is
# only min(32, CPUs + 4); a turn waiting on its model holds its thread.
os.environ.setdefault("PYTHON_THREADPOOL_THREAD_COUNT", "300")

# As local.settings.sample.json and Azure set it: build_app refuses to start without it (the HTTP
# streams types need it); hosts the tests start as subprocesses inherit it.
os.environ["PYTHON_ENABLE_INIT_INDEXING"] = "1"

# A developer's shell may export a real model's settings; the suite must behave the same there as
# on CI, so every test starts from "no model configured" and sets what it needs.
for _name in [n for n in os.environ if n.startswith(("OPENAI_", "AZURE_OPENAI_", "DURABLE_AGENTS_STREAM_"))]:
    del os.environ[_name]

# Runs' event streams (hosting.streams) of this test run go to a store of its own, never the
# developer's default one; a host a test starts as a subprocess gets one in its data directory.
os.environ["DURABLE_AGENTS_STREAM_PATH"] = os.path.join(
    tempfile.mkdtemp(prefix="durable-agents-tests-"), "streams.db"
)

if TYPE_CHECKING:
    from agents.testing import ModelRequest, ModelRoute, ModelServer, Reply

SUMMARIES = "conversation-summaries"
"""The model server's route for conversation summaries (`summaries_route`)."""


def summary_of(request: ModelRequest) -> Reply:
    """The default summary: the user's lines of the transcript, so it is about the conversation."""
    from agents.testing import Reply

    said = [line[6:] for line in (request.last_user_text or "").splitlines() if line.startswith("user: ")]
    return Reply.text("Earlier the user asked: " + " / ".join(said))


def summaries_route(server: ModelServer) -> ModelRoute:
    """Answer conversation-summary calls (agents.memory.ConversationMemoryProvider) apart from the
    script: a host summarises an ended session of a user in the background, so that call can
    arrive during a later test, where it must neither take that test's scripted reply nor show up
    in its `requests` (the route keeps them). `summary_of` answers; a test may route its own."""
    from agents.memory import SUMMARY_INSTRUCTIONS

    def is_summary(request: ModelRequest) -> bool:
        return any(m.role == "system" and m.text.startswith(SUMMARY_INSTRUCTIONS) for m in request.messages)

    return server.route(SUMMARIES, is_summary, summary_of)


@pytest.fixture(scope="session")
def model_server() -> Iterator[ModelServer]:
    """One scripted local model server for the session (use `model` to get it reset per test);
    conversation summaries go to their own route (`summaries_route`)."""
    # Imported here so a broken `agents` package fails only the tests that need the server.
    from agents.testing import ModelServer

    with ModelServer(mode="scripted") as server:
        summaries_route(server)
        yield server


@pytest.fixture
def model(model_server: ModelServer) -> Iterator[ModelServer]:
    """The session's scripted model server with an empty script, no handler and no history (and
    the default summaries route, whatever the last test routed)."""
    model_server.reset()
    summaries_route(model_server)
    yield model_server
    model_server.reset()
    summaries_route(model_server)


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server (installed by .ci/services.sh) on a free loopback port with its files in
    a temp dir, for the session; stopped afterwards. Tests use keys of their own."""
    import shutil
    import socket
    import subprocess
    import time

    executable = shutil.which("redis-server")
    if executable is None:
        pytest.fail("redis-server is not installed: run `make services` (.ci/services.sh)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    directory = tmp_path_factory.mktemp("redis")
    process = subprocess.Popen(
        [executable, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory),
         "--save", "", "--appendonly", "no", "--protected-mode", "yes"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start on port {port}")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def _cluster_ports(count: int) -> list[int]:
    """Free loopback ports below 55536 whose cluster bus port (port + 10000) is free too."""
    import random
    import socket

    ports: list[int] = []
    while len(ports) < count:
        port = random.randint(20000, 55535)
        if port in ports:
            continue
        try:
            for candidate in (port, port + 10000):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        ports.append(port)
    return ports


@pytest.fixture(scope="session")
def redis_cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real 3-node Redis cluster (redis-server --cluster-enabled yes, no replicas, joined with
    redis-cli --cluster create; both installed by .ci/services.sh) on free loopback ports, for the
    session; stopped afterwards. The URL names one node: a cluster client finds the others."""
    import shutil
    import subprocess
    import time

    server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    if server is None or cli is None:
        pytest.fail("redis-server and redis-cli are not installed: run `make services` (.ci/services.sh)")
    ports = _cluster_ports(3)
    processes = []
    try:
        for port in ports:
            directory = tmp_path_factory.mktemp(f"redis-cluster-{port}")
            processes.append(
                subprocess.Popen(
                    [
                        server,
                        "--port",
                        str(port),
                        "--bind",
                        "127.0.0.1",
                        "--dir",
                        str(directory),
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                        "--protected-mode",
                        "yes",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.STDOUT,
                )
            )
        deadline = time.monotonic() + 15
        for port in ports:
            while (
                subprocess.run([cli, "-p", str(port), "ping"], capture_output=True, text=True).stdout.strip()
                != "PONG"
            ):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server (cluster node) did not start on port {port}")
                time.sleep(0.05)
        subprocess.run(
            [
                cli,
                "--cluster",
                "create",
                *(f"127.0.0.1:{p}" for p in ports),
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
            timeout=30,
        )
        while (
            "cluster_state:ok"
            not in subprocess.run(
                [cli, "-p", str(ports[0]), "cluster", "info"], capture_output=True, text=True
            ).stdout
        ):
            if time.monotonic() > deadline + 15:
                raise RuntimeError("the Redis cluster did not reach cluster_state:ok")
            time.sleep(0.1)
        yield f"redis://127.0.0.1:{ports[0]}/0"
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()


# -- the order the parallel run takes the tests in -----------------------------------------------
# pytest-xdist's worksteal scheduler hands each worker an equal count of consecutive tests, then an
# idle worker takes the second half of the longest queue left. In file order a few minute-long
# tests (a host killed and restarted at each point) ended some worker's share, and the run's last
# minutes had one or two workers busy, the machine half idle. Ordered here from the last run's
# times (tests/durations.json, written by .ci/durations.py): each worker's share holds an even part
# of the whole time and starts with its longest files, so what is left to steal at the end is short.
# Tests stay in their file's order, a file's tests together (its module-scoped hosts start once
# per share); a test without a recorded time counts as DEFAULT_SECONDS.
DURATIONS = Path(__file__).with_name("durations.json")
DEFAULT_SECONDS = 0.5


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1 and DURATIONS.exists():
        recorded: dict[str, float] = json.loads(DURATIONS.read_text())
        items[:] = balanced_order(items, workers, lambda item: recorded.get(item.nodeid, DEFAULT_SECONDS))


def balanced_order(
    items: list[pytest.Item], workers: int, seconds: Callable[[pytest.Item], float]
) -> list[pytest.Item]:
    """`items` reordered into `workers` consecutive shares of the sizes worksteal gives (an equal
    count each), each share's files longest first."""
    sizes = []
    left = len(items)
    for remaining in range(workers, 0, -1):  # as worksteal's first distribution counts them
        sizes.append(left // remaining)
        left -= sizes[-1]
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    pending = sorted(files.values(), key=lambda tests: -sum(map(seconds, tests)))
    shares: list[list[list[pytest.Item]]] = [[] for _ in sizes]
    loads, counts = [0.0] * workers, [0] * workers
    while pending:
        tests = pending.pop(0)
        share = min((s for s in range(workers) if counts[s] < sizes[s]), key=lambda s: loads[s])
        taken, rest = tests[: sizes[share] - counts[share]], tests[sizes[share] - counts[share] :]
        shares[share].append(taken)
        loads[share] += sum(map(seconds, taken))
        counts[share] += len(taken)
        if rest:  # the share is full: the file's other tests go to the next share that has room
            pending.insert(0, rest)
    ordered: list[pytest.Item] = []
    for files_of_share in shares:
        for tests in sorted(files_of_share, key=lambda tests: -sum(map(seconds, tests))):
            ordered.extend(tests)
    return ordered
