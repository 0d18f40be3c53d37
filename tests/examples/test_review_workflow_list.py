"""`GET /api/workflows/review`: the newest review workflow instances, as the console lists them."""

from __future__ import annotations

import asyncio
from typing import Any

import azure.durable_functions as df
from hosting_support import Api

from agents.testing import ModelServer, Reply
from hosting.lifecycle import EXPIRY


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


async def test_every_review_instance_is_listed_behind_pages_of_other_instances(
    api: Api, host: Any, model: ModelServer
) -> None:
    # More than one page (100, the extension's default) of other instances of the task hub,
    # finished expiry checks of sessions here, with ids that sort before any review id: the
    # backend answers the instance query in instance id order (the Azure Storage Instances
    # table), so a first page of all instances would hold none of the review instances.
    client = df.DurableOrchestrationClient(host.client_binding())
    others = [f"0-expiry-{n:03d}" for n in range(130)]
    for instance in others:
        await client.start_new(EXPIRY, instance, {"agent": "assistant", "session": instance, "once": True})
    model.handler = lambda request: (
        Reply.json({"approved": True, "feedback": "ok"}) if request.response_format else Reply.text("draft")
    )
    ids = []
    for topic in ("one", "two", "three"):
        started = await api.post("/api/workflows/review", json_body={"topic": topic})
        assert started.status == 202, started.body
        ids.append(started.json()["instance_id"])
    everything = await client.get_status_all()  # the SDK's query: the backend's first page only
    assert len(everything) == 100 and not {s.instance_id for s in everything} & set(ids)
    listed = await api.get("/api/workflows/review")
    assert listed.status == 200, listed.body
    assert sorted(i["instance_id"] for i in listed.json()["instances"]) == sorted(ids)
    assert all(i.startswith("review-") for i in ids)
