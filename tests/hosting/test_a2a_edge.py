"""The A2A edge's pure parts: task ids read back to the run they name (and nothing else), a run's
outcome as the task's state, and the card's endpoint taken from the caller's host."""

from __future__ import annotations

from a2a.types import a2a_pb2 as pb

from agents import TurnResult
from hosting.a2a._card import rpc_url
from hosting.a2a._tasks import TaskRef, decode_task_id, finished_task
from state import TurnFailure


def test_a_task_id_names_its_run_and_only_ids_the_app_could_store() -> None:
    ref = TaskRef("assistant", "s-1", "c.2")
    assert ref.task_id == "s-1:c.2"
    assert decode_task_id("assistant", ref.task_id) == ref
    for bad in ("", "s-1", ":c", "s:", "a/b:c", "s:c:d", "..:c", "s:" + "x" * 129, "s@x:c"):
        assert decode_task_id("assistant", bad) is None, bad


def test_a_finished_run_is_completed_failed_canceled_or_rejected() -> None:
    ref = TaskRef("assistant", "s", "c")
    done = finished_task(ref, TurnResult("c", "succeeded", text="the answer"))
    assert done.status.state == pb.TASK_STATE_COMPLETED
    assert [p.text for a in done.artifacts for p in a.parts] == ["the answer"]
    assert done.id == "s:c" and done.context_id == "s"

    def failed(code: str) -> pb.Task:
        return finished_task(ref, TurnResult("c", "failed", error=TurnFailure(code=code, message="why")))

    assert failed("run_cancelled").status.state == pb.TASK_STATE_CANCELED
    assert failed("content_filter").status.state == pb.TASK_STATE_REJECTED
    broken = failed("model_error")
    assert broken.status.state == pb.TASK_STATE_FAILED and not broken.artifacts
    assert broken.status.message.parts[0].text == "model_error: why"


def test_the_endpoint_is_on_the_host_the_caller_named() -> None:
    card = "http://127.0.0.1:7072/api/a2a/assistant/.well-known/agent-card.json?code=k"
    assert rpc_url(card, {"Host": "localhost:7071"}) == "http://localhost:7071/api/a2a/assistant"
    front = {"host": "internal", "X-Forwarded-Host": "app.example, proxy", "X-Forwarded-Proto": "https"}
    assert rpc_url(card, front) == "https://app.example/api/a2a/assistant"
    assert rpc_url(card, {}) == "http://127.0.0.1:7072/api/a2a/assistant"
