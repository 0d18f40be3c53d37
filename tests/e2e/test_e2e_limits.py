"""A session that would outgrow its size limit, over real sockets: the refused turn is answered
(409 `session_too_large`) and recorded, instead of the run staying pending forever."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from e2e_support import OWN_SCHEMA, REFERENCE_SCHEMA, Answer, Client, HostProcess, history, schema_errors

from agents.testing import ModelServer, Reply

LIMIT = 8000


@pytest.fixture(scope="module")
def limited_host(
    model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostProcess]:
    """A host whose sessions may hold at most LIMIT bytes (set through the environment)."""
    root = tmp_path_factory.mktemp("e2e-limits")
    with pytest.MonkeyPatch.context() as env:
        # host_env copies the environment it is started from.
        env.setenv("DURABLE_AGENTS_MAX_SESSION_BYTES", str(LIMIT))
        host = HostProcess(root / "data", model_server.base_url, root / "host.log").start()
    try:
        yield host
    finally:
        host.stop()


@pytest.fixture
def limited(http: aiohttp.ClientSession, limited_host: HostProcess, model: ModelServer) -> Client:
    return Client(http, limited_host.url)


async def fill(client: Client, model: ModelServer, session: str, reply: str, turns: int = 20) -> list[Answer]:
    """Send turns with big answers until one is not a 200; every answer in order."""
    answers: list[Answer] = []
    for turn in range(turns):
        model.script(Reply.text(reply))
        answer = await client.run("assistant", f"turn {turn}", session)
        answers.append(answer)
        if answer.status != 200:
            return answers
    raise AssertionError("the session never reached its limit")


def problem_of(answer: Answer) -> dict[str, Any]:
    assert answer.content_type == "application/problem+json", (answer.status, answer.body[:300])
    problem: dict[str, Any] = answer.json()
    return problem


async def test_a_full_session_answers_409_at_once_and_keeps_its_history(
    limited: Client, model: ModelServer
) -> None:
    session = "e2e-limit-full"
    answers = await fill(limited, model, session, "w" * 1500)
    refused = answers[-1]
    assert refused.status == 409, refused.body[:300]
    assert refused.elapsed < 10  # answered, not a 202 after the 30 s wait
    problem = problem_of(refused)
    assert problem["code"] == "session_too_large" and problem["max_session_bytes"] == LIMIT
    assert session in problem["detail"] and str(LIMIT) in problem["detail"]
    assert "new session" in problem["detail"]

    stored = await limited.session_state("assistant", session)
    statuses = [t["status"] for t in stored["turns"]]
    assert statuses == ["succeeded"] * (len(answers) - 1) + ["failed"]
    assert stored["turns"][-1]["error"]["code"] == "session_too_large"
    entries = history(stored["state"])
    # Every answered turn is there, as answered.
    for index, answer in enumerate(answers[:-1]):
        assert entries[2 * index + 1]["correlationId"] == answer.json()["correlation_id"]
    assert entries[-1]["failure"]["code"] == "session_too_large"
    assert schema_errors(stored["state"], OWN_SCHEMA) == []
    assert schema_errors(stored["state"], REFERENCE_SCHEMA) == []
    size = len(json.dumps(stored["state"], ensure_ascii=False, separators=(",", ":")).encode())
    assert size < LIMIT + 4000

    run = await limited.get(f"/api/agents/assistant/sessions/{session}/runs/{problem['correlation_id']}")
    assert run.status == 200 and run.json()["status"] == "failed"
    assert run.json()["error"]["code"] == "session_too_large"

    # Refused again without a model call; a new session works.
    calls = len(model.requests)
    again = await limited.run("assistant", "x" * 2000, session)
    assert again.status == 409 and problem_of(again)["code"] == "session_too_large"
    assert len(model.requests) == calls
    model.script(Reply.text("fresh start"))
    fresh = await limited.run("assistant", "hello again")
    assert fresh.status == 200 and fresh.json()["response"]["text"] == "fresh start"


async def test_the_default_limit_fires_before_the_hosts_own_1_mib(client: Client, model: ModelServer) -> None:
    # The shared host runs with the defaults: 960 KiB sessions on a host storing at most 1 MiB. Had
    # the host's limit fired first, the operation would fail and this wait end in a 202 after 30 s.
    # Older turns are archived (docs/state.md), so only a single turn that large reaches the limit.
    for turn in range(3):  # 1.2 MB of history: no ceiling
        model.script(Reply.text("d" * 400_000))
        assert (await client.run("assistant", f"turn {turn}", "e2e-limit-default")).status == 200
    answers = await fill(client, model, "e2e-limit-default", "d" * 1_000_000, turns=2)
    refused = answers[-1]
    assert refused.status == 409, refused.body[:300]
    assert problem_of(refused)["max_session_bytes"] == 960 * 1024
    stored = await client.session_state("assistant", "e2e-limit-default")
    assert [t["status"] for t in stored["turns"]][-1] == "failed"
    assert len(json.dumps(stored["state"]).encode()) < 1024 * 1024
