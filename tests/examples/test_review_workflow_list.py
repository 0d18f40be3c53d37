"""`GET /api/workflows/review`: the newest review workflow instances, as the console lists them."""

from __future__ import annotations

import asyncio

from hosting_support import Api

from agents.testing import ModelServer, Reply


async def test_review_workflows_are_listed_newest_first(api: Api, model: ModelServer) -> None:
    model.handler = lambda request: (
        Reply.json({"approved": True, "feedback": "ok"}) if request.response_format else Reply.text("draft")
    )
    ids: list[str] = []
    for topic in ("first", "second"):
        if ids:
            # Created times have a resolution of one second (as the extension reports them).
            await asyncio.sleep(1.1)
        started = await api.post("/api/workflows/review", json_body={"topic": topic})
        assert started.status == 202, started.body
        ids.append(started.json()["instance_id"])
    listed = await api.get("/api/workflows/review")
    assert listed.status == 200, listed.body
    instances = listed.json()["instances"]
    order = [i["instance_id"] for i in instances]
    assert order.index(ids[1]) < order.index(ids[0]), order
    assert all(i["location"].endswith(i["instance_id"]) and i["runtime_status"] for i in instances)
