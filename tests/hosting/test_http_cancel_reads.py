"""What the cancel route costs the durable backend: it reads the session's entity state once,
whatever it answers (the local host counts the durable API calls it serves, by kind)."""

from __future__ import annotations

from typing import Any

from hosting_support import Api

from agents.testing import ModelServer, Reply

RUN = "/api/agents/assistant/run"


def cancel_path(session: str, run: str) -> str:
    return f"/api/agents/assistant/sessions/{session}/runs/{run}/cancel"


async def test_a_cancel_reads_the_session_once(api: Api, host: Any, model: ModelServer) -> None:
    model.script(Reply.text("done"))
    body = {"message": "hi", "session_id": "c-reads", "correlation_id": "c-reads-1"}
    done = await api.post(RUN, json_body=body)
    assert done.status == 200, done.body
    calls = host.durable_api.calls
    answers = []
    for run in ("c-reads-1", "nobody"):  # a finished run (409), an unknown one (404)
        before = calls["read_entity"]
        answer = await api.post(cancel_path("c-reads", run))
        answers.append((answer.status, answer.json()["code"]))
        assert calls["read_entity"] - before == 1, (run, calls)
    assert answers == [(409, "run_finished"), (404, "run_not_found")]
