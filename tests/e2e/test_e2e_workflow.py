"""The app's review workflow over HTTP: writer and reviewer agents, then a human's approval."""

from __future__ import annotations

import json
from typing import Any

from e2e_support import Client, eventually, history

from agents.testing import ModelRequest, ModelServer, Reply

START = "/api/workflows/review"


async def test_review_workflow_calls_two_agents_and_waits_for_approval(
    client: Client, model: ModelServer
) -> None:
    verdicts = [
        {"approved": False, "feedback": "Mention the price."},
        {"approved": True, "feedback": "Good."},
    ]
    drafts = iter(["Draft one", "Draft two, now with the price"])

    def handler(request: ModelRequest) -> Reply:
        # The reviewer asks for structured output; the writer for text.
        return (
            Reply.json(verdicts.pop(0)) if request.response_format is not None else Reply.text(next(drafts))
        )

    model.handler = handler
    started = await client.post(START, json_body={"topic": "our espresso", "max_rounds": 3})
    assert started.status == 202, started.body
    instance = started.json()["instance_id"]

    async def status() -> dict[str, Any]:
        answer = await client.get(f"{START}/{instance}")
        assert answer.status == 200, answer.body
        result: dict[str, Any] = answer.json()
        return result

    async def awaiting_approval() -> dict[str, Any] | None:
        current = await status()
        custom = current.get("custom_status") or {}
        return current if isinstance(custom, dict) and custom.get("stage") == "awaiting_approval" else None

    waiting = await eventually(awaiting_approval, "the workflow waiting for approval")
    assert waiting["runtime_status"] == "Running"
    assert waiting["custom_status"]["draft"] == "Draft two, now with the price"
    assert waiting["custom_status"]["reviewer_approved"] is True

    # Writer, reviewer, writer (revising with the feedback), reviewer: four model calls, in order.
    roles = ["reviewer" if r.response_format is not None else "writer" for r in model.requests]
    assert roles == ["writer", "reviewer", "writer", "reviewer"]
    assert "Draft one" in (model.requests[1].last_user_text or "")
    assert "Mention the price." in (model.requests[2].last_user_text or "")

    # Nothing more happens until the approval event arrives.
    still = await status()
    assert still["runtime_status"] == "Running" and len(model.requests) == 4

    approval = await client.post(
        f"{START}/{instance}/approval", json_body={"approved": True, "comment": "Ship it"}
    )
    assert approval.status == 202, approval.body

    async def finished() -> dict[str, Any] | None:
        current = await status()
        return current if current["runtime_status"] in ("Completed", "Failed", "Terminated") else None

    done = await eventually(finished, "the workflow completing")
    assert done["runtime_status"] == "Completed", done
    output = done["output"] if isinstance(done["output"], dict) else json.loads(done["output"])
    assert output["status"] == "approved" and output["comment"] == "Ship it"
    assert output["draft"] == "Draft two, now with the price"
    assert [r["approved"] for r in output["reviews"]] == [False, True]

    # The agents' turns are ordinary sessions, recorded with the orchestration's id.
    writer = await client.session_state("writer", f"{instance}-writer")
    requests = [e for e in history(writer["state"]) if e["$type"] == "request"]
    assert len(requests) == 2 and {r["orchestrationId"] for r in requests} == {instance}
    reviewer = await client.session_state("reviewer", f"{instance}-reviewer")
    assert [t["status"] for t in reviewer["turns"]] == ["succeeded", "succeeded"]

    late = await client.post(f"{START}/{instance}/approval", json_body={"approved": False})
    assert late.status == 409 and late.json()["code"] == "workflow_finished", late.body
