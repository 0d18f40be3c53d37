"""The review workflow end to end: orchestrator → agent entities → human approval, via the local host."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import azure.durable_functions as df
from hosting_support import Api

from agents.testing import ModelRequest, ModelServer, Reply
from examples.review import WORKFLOW_NAME

START = "/api/workflows/review"


def script_review(model: ModelServer, verdicts: list[dict[str, Any]]) -> None:
    """Writer answers "Draft vN"; the reviewer (asked for structured output) gives `verdicts`."""
    drafts = iter(range(1, 100))
    pending = list(verdicts)

    def handler(request: ModelRequest) -> Reply:
        if request.response_format is not None:
            return Reply.json(pending.pop(0))
        return Reply.text(f"Draft v{next(drafts)}")

    model.handler = handler


def writer_prompts(model: ModelServer) -> list[str]:
    """What the writer was asked, in order (the reviewer's requests ask for structured output)."""
    return [r.last_user_text or "" for r in model.requests if r.response_format is None]


async def status_of(api: Api, instance: str) -> dict[str, Any]:
    response = await api.get(f"{START}/{instance}")
    assert response.status == 200, response.body
    return response.json()


async def wait_until(api: Api, instance: str, predicate: Any, timeout: float = 20.0) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        status = await status_of(api, instance)
        if predicate(status):
            return status
        assert asyncio.get_running_loop().time() < deadline, status
        await asyncio.sleep(0.05)


def awaiting(status: dict[str, Any]) -> bool:
    custom = status.get("custom_status") or {}
    return isinstance(custom, dict) and custom.get("stage") == "awaiting_approval"


def finished(status: dict[str, Any]) -> bool:
    return status["runtime_status"] in ("Completed", "Failed", "Terminated")


async def test_writer_and_reviewer_loop_then_a_human_approves(
    api: Api, host: Any, model: ModelServer
) -> None:
    script_review(
        model, [{"approved": False, "feedback": "Shorter."}, {"approved": True, "feedback": "Good."}]
    )
    started = await api.post(
        START, json_body={"topic": "coffee", "max_rounds": 3, "approval_timeout_seconds": 600}
    )
    assert started.status == 202, started.body
    instance = started.json()["instance_id"]
    assert started.headers["location"].endswith(f"/api/workflows/review/{instance}")
    waiting = await wait_until(api, instance, awaiting)
    assert waiting["custom_status"]["draft"] == "Draft v2"
    assert waiting["custom_status"]["reviewer_approved"] is True
    assert waiting["custom_status"]["topic"] == "coffee"  # every status says what it is about
    listed = (await api.get(START)).json()["instances"]
    assert [i["custom_status"]["topic"] for i in listed if i["instance_id"] == instance] == ["coffee"]
    approval = await api.post(
        f"{START}/{instance}/approval", json_body={"approved": True, "comment": "ship it"}
    )
    assert approval.status == 202
    done = await wait_until(api, instance, finished)
    assert done["runtime_status"] == "Completed"
    output = done["output"] if isinstance(done["output"], dict) else json.loads(done["output"])
    assert output["status"] == "approved" and output["comment"] == "ship it"
    assert output["draft"] == "Draft v2"
    assert output["topic"] == "coffee" and done["custom_status"]["topic"] == "coffee"
    # The revision names the topic too: a writer that forgets earlier turns keeps it.
    assert "'coffee'" in writer_prompts(model)[1]
    assert [r["approved"] for r in output["reviews"]] == [False, True]
    # The turns ran in the agents' session entities, recorded with the orchestration's id.
    writer = (await api.get(f"/api/agents/writer/sessions/{instance}-writer")).json()
    requests = [e for e in writer["state"]["data"]["conversationHistory"] if e["$type"] == "request"]
    assert len(requests) == 2
    assert {r["orchestrationId"] for r in requests} == {instance}
    reviewer = (await api.get(f"/api/agents/reviewer/sessions/{instance}-reviewer")).json()
    assert [t["status"] for t in reviewer["turns"]] == ["succeeded", "succeeded"]
    # A finished workflow takes no more approvals.
    late = await api.post(f"{START}/{instance}/approval", json_body={"approved": False})
    assert late.status == 409 and late.json()["code"] == "workflow_finished"


async def test_rejection_and_round_limit(api: Api, host: Any, model: ModelServer) -> None:
    script_review(model, [{"approved": False, "feedback": "No."}])
    started = await api.post(START, json_body={"topic": "tea", "max_rounds": 1})
    instance = started.json()["instance_id"]
    waiting = await wait_until(api, instance, awaiting)
    assert waiting["custom_status"]["reviewer_approved"] is False
    await api.post(f"{START}/{instance}/approval", json_body={"approved": False, "comment": "not yet"})
    done = await wait_until(api, instance, finished)
    output = done["output"] if isinstance(done["output"], dict) else json.loads(done["output"])
    assert output["status"] == "rejected" and len(output["reviews"]) == 1


async def test_no_human_answer_times_out(api: Api, host: Any, model: ModelServer) -> None:
    script_review(model, [{"approved": True, "feedback": "Fine."}])
    started = await api.post(START, json_body={"topic": "tea", "approval_timeout_seconds": 1})
    instance = started.json()["instance_id"]
    done = await wait_until(api, instance, finished)
    output = done["output"] if isinstance(done["output"], dict) else json.loads(done["output"])
    assert output["status"] == "timed_out"


async def test_a_failed_agent_turn_ends_the_workflow_with_the_error(
    api: Api, host: Any, model: ModelServer
) -> None:
    model.script(Reply.error(500, "model down", code="server_error"))
    started = await api.post(START, json_body={"topic": "tea"})
    instance = started.json()["instance_id"]
    done = await wait_until(api, instance, finished)
    output = done["output"] if isinstance(done["output"], dict) else json.loads(done["output"])
    assert output["status"] == "failed"
    assert output["error"]["agent"] == "writer"
    writer = (await api.get(f"/api/agents/writer/sessions/{instance}-writer")).json()
    assert [t["status"] for t in writer["turns"]] == ["failed"]


async def test_workflow_routes_validate_their_input(api: Api, host: Any) -> None:
    assert (await api.post(START, json_body={"topic": ""})).json()["field"] == "topic"
    assert (await api.post(START, json_body={"topic": "x", "max_rounds": 0})).json()["field"] == "max_rounds"
    assert (await api.get(f"{START}/no-such-instance")).status == 404
    bad = await api.get(f"{START}/a@b")
    assert bad.status == 400 and bad.json()["field"] == "instance_id"
    missing = await api.post(f"{START}/no-such-instance/approval", json_body={"approved": True})
    assert missing.status == 404
    wrong = await api.post(f"{START}/x/approval", json_body={"approved": "yes"})
    assert wrong.status == 400 and wrong.json()["field"] == "approved"


async def test_integer_fields_take_json_numbers_without_a_fraction(
    api: Api, host: Any, model: ModelServer
) -> None:
    # Found by the API fuzzer: the OpenAPI document says "integer", and JSON Schema counts 2.0
    # as one, but the strict body model refused it.
    script_review(model, [{"approved": True, "feedback": "Good."}])
    body = {"topic": "tea", "max_rounds": 2.0, "approval_timeout_seconds": 600.0}
    started = await api.post(START, json_body=body)
    assert started.status == 202, started.body
    instance = started.json()["instance_id"]
    await wait_until(api, instance, lambda s: awaiting(s) or finished(s))
    for bad in (2.5, "2", True):
        rejected = await api.post(START, json_body={"topic": "tea", "max_rounds": bad})
        assert rejected.status == 400 and rejected.json()["field"] == "max_rounds", (bad, rejected.body)


def test_the_orchestrator_is_registered(app: df.DFApp) -> None:
    from hosting_support import functions

    binding = json.loads(str(functions(app)[WORKFLOW_NAME]))["bindings"][0]
    assert binding["type"] == "orchestrationTrigger"
