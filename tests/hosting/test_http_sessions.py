"""Sessions (read, reset, delete), the agent list, health, and the OpenAPI document."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import azure.durable_functions as df
import pytest
from hosting_support import Api, all_functions

from agents.testing import ModelServer, Reply
from state import load_state

RUN = "/api/agents/assistant/run"


async def eventually(check: Any, timeout: float = 30.0) -> Any:
    """Poll an async check until it returns a truthy value (operations are queued behind turns)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await check()
        if value or asyncio.get_running_loop().time() > deadline:
            return value
        await asyncio.sleep(0.02)


async def test_session_shows_history_usage_and_state_bag(api: Api, host: Any, model: ModelServer) -> None:
    model.script(Reply.text("one"), Reply.text("two").with_usage(11, 3))
    first = (await api.post(RUN, json_body={"message": "a", "session_id": "show"})).json()
    await api.post(RUN, json_body={"message": "b", "session_id": "show"})
    response = await api.get("/api/agents/assistant/sessions/show")
    assert response.status == 200
    body = response.json()
    assert body["agent"] == "assistant" and body["session_id"] == "show"
    assert body["schema_version"] == "1.8.0"
    assert [t["status"] for t in body["turns"]] == ["succeeded", "succeeded"]
    assert body["turns"][0]["correlation_id"] == first["correlation_id"]
    assert all(t["usage"] and t["usage"].get("totalTokenCount") for t in body["turns"])
    assert body["turns"][1]["usage"]["inputTokenCount"] == 11
    assert body["turns"][1]["usage"]["outputTokenCount"] == 3
    assert body["state_bag"] == {}
    # The stored state exactly as saved.
    stored = await host._store.run(host._store.load_state, "@dafx-assistant@show")
    assert body["state"] == json.loads(stored)


async def test_unknown_session_is_404(api: Api, host: Any) -> None:
    for method in ("GET", "DELETE"):
        response = await api.request(method, "/api/agents/assistant/sessions/nobody")
        assert response.status == 404 and response.json()["code"] == "session_not_found"
    response = await api.post("/api/agents/assistant/sessions/nobody/reset")
    assert response.status == 404


async def test_reset_empties_the_session_and_later_turns_start_fresh(
    api: Api, host: Any, model: ModelServer
) -> None:
    model.script(Reply.text("one"), Reply.text("after reset"))
    await api.post(RUN, json_body={"message": "remember me", "session_id": "rs"})
    reset = await api.post("/api/agents/assistant/sessions/rs/reset")
    assert reset.status == 202 and reset.json()["status"] == "reset_requested"
    after = await api.post(RUN, json_body={"message": "who am I?", "session_id": "rs"})
    assert after.status == 200
    # The reset was queued before the turn, so the model saw no earlier history.
    assert [m.text for m in model.requests[1].messages if m.role == "user"] == ["who am I?"]
    stored = load_state(await host._store.run(host._store.load_state, "@dafx-assistant@rs"))
    assert len(stored.entries) == 2


async def test_delete_removes_the_session(api: Api, host: Any, model: ModelServer) -> None:
    model.script(Reply.text("x"))
    await api.post(RUN, json_body={"message": "hi", "session_id": "gone"})
    deleted = await api.delete("/api/agents/assistant/sessions/gone")
    assert deleted.status == 202 and deleted.json()["status"] == "delete_requested"

    async def is_gone() -> bool:
        return (await api.get("/api/agents/assistant/sessions/gone")).status == 404

    assert await eventually(is_gone)


async def test_agents_lists_what_each_agent_offers(api: Api) -> None:
    response = await api.get("/api/agents")
    assert response.status == 200
    agents = {a["name"]: a for a in response.json()["agents"]}
    assert set(agents) == {"assistant", "writer", "reviewer"}
    assert agents["assistant"]["entity"] == "dafx-assistant"
    assert agents["assistant"]["description"] == "plain"
    assert agents["reviewer"]["structured_output"] is True
    assert agents["assistant"]["structured_output"] is False
    assert agents["writer"]["run_url"] == "http://localhost:7071/api/agents/writer/run"


async def test_health_checks_configuration_and_storage_for_real(api: Api, offline_api: Api) -> None:
    healthy = await api.get("/api/health")
    assert healthy.status == 200
    body = healthy.json()
    assert body["status"] == "healthy"
    assert body["checks"]["storage"]["ok"] and body["checks"]["configuration"]["ok"]
    unhealthy = await offline_api.get("/api/health")
    assert unhealthy.status == 503
    assert unhealthy.json()["checks"]["storage"]["ok"] is False
    assert unhealthy.json()["checks"]["configuration"]["ok"] is True


def test_auth_levels(app: df.DFApp) -> None:
    levels = {}
    for function in all_functions(app):
        trigger = function.get_trigger()
        if getattr(trigger, "route", None) is not None:
            levels[function.get_function_name()] = str(
                getattr(trigger.auth_level, "value", trigger.auth_level)
            ).upper()
    assert levels.pop("health") == "ANONYMOUS"
    assert levels.pop("openapi") == "ANONYMOUS"
    assert levels.pop("console") == "ANONYMOUS"  # static files only; the page calls the API with a key
    assert levels and set(levels.values()) == {"FUNCTION"}


async def test_openapi_document_matches_the_registered_routes_exactly(
    offline_api: Api, app: df.DFApp
) -> None:
    response = await offline_api.get("/api/openapi.json")
    assert response.status == 200
    document = response.json()
    assert document["openapi"] == "3.1.0"
    documented = {(path, method.upper()) for path, item in document["paths"].items() for method in item}
    registered = set()
    for function in all_functions(app):
        trigger = function.get_trigger()
        if getattr(trigger, "route", None) is None or trigger.route.startswith("console/"):
            continue  # the console is the page, not the API (docs/console.md)
        for method in trigger.methods:
            registered.add(("/api/" + trigger.route, str(getattr(method, "value", method)).upper()))
    assert documented == registered
    # Every referenced schema exists, and the anonymous routes need no key.
    text = json.dumps(document)
    for name in {ref.split("/")[-1] for ref in _refs(document)}:
        assert name in document["components"]["schemas"], name
    assert document["paths"]["/api/health"]["get"]["security"] == []
    assert document["paths"]["/api/agents/{agent}/run"]["post"]["security"]
    assert "text/plain" in document["paths"]["/api/agents/{agent}/run"]["post"]["requestBody"]["content"]
    assert "Problem" in text


def _refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        found = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
        return found + [r for v in value.values() for r in _refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in _refs(v)]
    return []


@pytest.mark.parametrize("path", ["/api/openapi.json", "/api/agents"])
async def test_routes_without_a_client_need_no_storage(offline_api: Api, path: str) -> None:
    assert (await offline_api.get(path)).status == 200
