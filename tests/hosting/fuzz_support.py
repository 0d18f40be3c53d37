"""Helpers of the API fuzzer: the real app on a `devhost.LocalHost` in a thread of its own (so
synchronous HTTP clients can call it over real sockets), snapshots of everything the host stores,
and the checks every problem response must pass."""

from __future__ import annotations

import asyncio
import pathlib
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import azure.durable_functions as df
from hosting_support import ROOT

from devhost import LocalHost

FUNCTION_KEY = "fuzz-function-key"


@contextmanager
def threaded_host(app: df.DFApp, data_dir: pathlib.Path) -> Iterator[LocalHost]:
    """A local host serving `app` on a free loopback port, its event loop on a daemon thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fuzz-host", daemon=True)
    thread.start()
    host = LocalHost(app, data_dir, project_dir=ROOT, function_key=FUNCTION_KEY)
    try:
        asyncio.run_coroutine_threadsafe(host.start(), loop).result(timeout=30)
        yield host
    finally:
        asyncio.run_coroutine_threadsafe(host.stop(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


@dataclass(frozen=True)
class Stored:
    """Everything the host keeps: entity states (exact text), queued entity operations and
    orchestration messages and work in flight, orchestration instances with their history length."""

    entities: tuple[tuple[str, str | None], ...]
    queued: tuple[tuple[str, str, str | None], ...]
    orchestrations: tuple[tuple[str, str, str | None, int], ...]


def read_stored(db_path: pathlib.Path) -> Stored:
    """A snapshot of the host's database, read through a separate read-only connection."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=10)
    try:
        entities = conn.execute("SELECT entity_id, state FROM entity_states ORDER BY entity_id").fetchall()
        queued = conn.execute(
            "SELECT entity_id, operation, input FROM entity_messages ORDER BY seq"
        ).fetchall()
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        orchestrations: list[tuple[str, str, str | None, int]] = []
        if "orch_inbox" in tables and "orch_work" in tables:
            # Orchestration work in flight counts as queued too: a running workflow (one started by
            # an earlier request) can pause longer than the settling reads between its steps. A
            # timer is not in flight: the review workflow waits a day for its human.
            queued += conn.execute(
                "SELECT instance_id, kind, payload FROM orch_inbox"
                " UNION ALL SELECT instance_id, kind, payload FROM orch_work WHERE kind != 'timer'"
            ).fetchall()
        if "orch_instances" in tables:
            orchestrations = conn.execute(
                "SELECT i.instance_id, i.status, i.custom_status,"
                " (SELECT COUNT(*) FROM orch_history h WHERE h.instance_id = i.instance_id)"
                " FROM orch_instances i ORDER BY i.instance_id"
            ).fetchall()
    finally:
        conn.close()
    return Stored(tuple(entities), tuple(queued), tuple(orchestrations))


def settled(db_path: pathlib.Path, timeout: float = 15.0) -> Stored:
    """The stored snapshot once the host is idle: no entity operation queued and nothing changing
    for three reads in a row. Work accepted by earlier requests (202s, workflows) must have
    finished, so a difference after the next request is that request's doing."""
    deadline = time.monotonic() + timeout
    previous: Stored | None = None
    stable = 0
    while True:
        current = read_stored(db_path)
        stable = stable + 1 if current == previous and not current.queued else 0
        if stable >= 2:
            return current
        if time.monotonic() > deadline:
            raise AssertionError(f"the host did not settle within {timeout} s: {current.queued[:5]}")
        previous = current
        time.sleep(0.03)


def describe_change(before: Stored, after: Stored) -> str:
    """What differs between two snapshots, for an assertion message."""
    parts = []
    for name in ("entities", "queued", "orchestrations"):
        old, new = set(getattr(before, name)), set(getattr(after, name))
        if old != new:
            parts.append(f"{name}: added {sorted(new - old)[:3]!r}, removed {sorted(old - new)[:3]!r}")
    return "; ".join(parts)


def check_responses_error(status: int, content_type: str, body: bytes) -> dict[str, Any]:
    """Assert a 4xx answer of the Responses API routes is that API's error, naming the problem."""
    import json

    assert content_type.split(";")[0].strip() == "application/json", (status, content_type, body[:200])
    error = json.loads(body).get("error")
    assert isinstance(error, dict), body[:200]
    for name in ("message", "type", "code"):
        assert isinstance(error.get(name), str) and error[name].strip(), (name, error)
    assert error["type"] == "invalid_request_error", error
    return error


def check_problem(status: int, content_type: str, body: bytes) -> dict[str, Any]:
    """Assert a 4xx answer is an RFC 9457 problem naming the problem; return the document."""
    import json

    assert content_type.split(";")[0].strip() == "application/problem+json", (
        status,
        content_type,
        body[:200],
    )
    problem = json.loads(body)
    assert isinstance(problem, dict), problem
    for name in ("type", "title", "code", "detail"):
        assert isinstance(problem.get(name), str) and problem[name].strip(), (name, problem)
    assert problem.get("status") == status, (status, problem)
    if problem["type"].startswith("urn:durable-agents:"):  # the app's own; the host's are about:blank
        assert problem["type"].endswith(":" + problem["code"]), problem
    return problem
