"""The OpenAPI document describes what the API really answers."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import jsonschema
from hosting_support import Api
from openapi_spec_validator import OpenAPIV31SpecValidator

from agents.testing import ModelServer, Reply


def schema_for(document: dict[str, Any], path: str, method: str, status: int) -> tuple[dict[str, Any], str]:
    """A validating schema for one documented JSON response (refs resolved against the components);
    a response that may also be an event stream (docs/streaming.md) is checked as its JSON form."""
    content = document["paths"][path][method]["responses"][str(status)]["content"]
    [(media, body)] = [(m, b) for m, b in content.items() if m != "text/event-stream"]
    return {**body["schema"], "components": document["components"]}, media


async def test_component_schemas_are_valid_json_schema(offline_api: Api) -> None:
    document = (await offline_api.get("/api/openapi.json")).json()
    for schema in document["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(schema)
    agent = document["paths"]["/api/agents/{agent}/run"]["post"]["parameters"][0]
    assert agent["schema"]["enum"] == ["assistant", "writer", "reviewer"]


async def test_the_document_is_valid_openapi_of_the_version_it_declares(offline_api: Api) -> None:
    # What a user's tooling checks first: the served document against the OpenAPI 3.1 schema (a
    # 3.2 keyword such as a media type's `itemSchema` fails it; generated clients read only 3.1).
    document = (await offline_api.get("/api/openapi.json")).json()
    assert document["openapi"].startswith("3.1.")
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in OpenAPIV31SpecValidator(document).iter_errors()]
    assert errors == []


async def test_real_answers_validate_against_the_document(api: Api, host: Any, model: ModelServer) -> None:
    document = (await api.get("/api/openapi.json")).json()
    model.script(Reply.text("hi"), Reply.error(500, "down"))
    cases = [
        (
            "post",
            "/api/agents/{agent}/run",
            await api.post("/api/agents/assistant/run", json_body={"message": "x", "session_id": "oa"}),
        ),
        (
            "post",
            "/api/agents/{agent}/run",
            await api.post("/api/agents/assistant/run", json_body={"message": "y", "session_id": "oa"}),
        ),
        (
            "post",
            "/api/agents/{agent}/run",
            await api.post("/api/agents/assistant/run", json_body={"message": ""}),
        ),
        (
            "post",
            "/api/agents/{agent}/run",
            await api.post(
                "/api/agents/assistant/run",
                json_body={"message": "z", "wait_for_response": False, "session_id": "oa2"},
            ),
        ),
        (
            "get",
            "/api/agents/{agent}/sessions/{session_id}",
            await api.get("/api/agents/assistant/sessions/oa"),
        ),
        (
            "get",
            "/api/agents/{agent}/sessions/{session_id}/runs/{correlation_id}",
            await api.get("/api/agents/assistant/sessions/oa/runs/none"),
        ),
        ("get", "/api/agents", await api.get("/api/agents")),
        ("get", "/api/health", await api.get("/api/health")),
        (
            "post",
            "/api/agents/{agent}/sessions/{session_id}/reset",
            await api.post("/api/agents/assistant/sessions/oa/reset"),
        ),
        (
            "get",
            "/api/agents/{agent}/sessions/{session_id}",
            await api.get("/api/agents/assistant/sessions/x@y"),
        ),
    ]
    statuses = []
    for method, path, response in cases:
        schema, media = schema_for(document, path, method, response.status)
        assert response.mimetype == media, (path, response.status)
        jsonschema.validate(response.json(), schema)
        statuses.append(response.status)
    assert sorted(set(statuses)) == [200, 202, 400, 502]


async def test_documented_id_and_key_parameters_accept_exactly_what_the_api_accepts(offline_api: Api) -> None:
    # Found by the API fuzzer: the Idempotency-Key header was documented as any string, so an
    # empty key was "schema-valid" but answered 400.
    document = (await offline_api.get("/api/openapi.json")).json()
    run = document["paths"]["/api/agents/{agent}/run"]["post"]
    schemas = {p["name"]: p["schema"] for p in run["parameters"]}
    samples = ["", "k", "a" * 128, "a" * 129, "k y", "k\u00e9", "k@y", "k/y", "k\ny", "~._-", "!#$"]
    for name in ("Idempotency-Key", "session_id", "thread_id"):
        validator = jsonschema.Draft202012Validator(schemas[name])
        for value in samples:
            headers = {"Content-Type": "application/json"}
            body: dict[str, Any] = {"message": "hi"}
            if name == "Idempotency-Key":
                headers[name] = value
            else:
                body[name] = value
            answer = await offline_api.post("/api/agents/assistant/run", json_body=body, headers=headers)
            # The offline binding answers 503 to anything that got past validation.
            accepted = answer.status == 503
            assert answer.status in (400, 503), (name, value, answer.status)
            assert validator.is_valid(value) == accepted, (name, value, answer.body)


async def test_bounds_are_published_as_json_schema_keywords(offline_api: Api) -> None:
    # A bound on an optional field once came out as pydantic's "ge", which JSON Schema ignores:
    # the fuzzer then sent 0 as a "valid" max_tool_rounds.
    document = (await offline_api.get("/api/openapi.json")).json()

    def keys(value: Any) -> set[str]:
        if isinstance(value, dict):
            return set(value) | {k for v in value.values() for k in keys(v)}
        if isinstance(value, list):
            return {k for v in value for k in keys(v)}
        return set()

    options = document["components"]["schemas"]["RunOptions"]["properties"]
    assert options["max_tool_rounds"]["anyOf"][0] == {"minimum": 1, "type": "integer"}
    assert not keys(document["components"]["schemas"]) & {"ge", "le", "gt", "lt"}


async def test_a_discarded_run_is_a_documented_410_on_the_run_and_on_its_retry(
    api: Api, host: Any, model: ModelServer
) -> None:
    document = (await api.get("/api/openapi.json")).json()
    model.script(Reply.text("hi"))
    first = await api.post("/api/agents/assistant/run", json_body={"message": "x", "session_id": "oa-gone"})
    correlation = first.json()["correlation_id"]
    assert (await api.post("/api/agents/assistant/sessions/oa-gone/reset")).status == 202
    run_path = f"/api/agents/assistant/sessions/oa-gone/runs/{correlation}"
    for _ in range(100):
        status = await api.get(run_path)
        if status.status == 410:
            break
        await asyncio.sleep(0.05)
    retry = await api.post(
        "/api/agents/assistant/run",
        json_body={"message": "x", "session_id": "oa-gone", "correlation_id": correlation},
    )
    cases = [
        ("get", "/api/agents/{agent}/sessions/{session_id}/runs/{correlation_id}", status),
        ("post", "/api/agents/{agent}/run", retry),
    ]
    for method, path, response in cases:
        assert response.status == 410, (path, response.status)
        schema, media = schema_for(document, path, method, 410)
        assert response.mimetype == media and response.json()["code"] == "run_discarded"
        jsonschema.validate(response.json(), schema)


SNAKE = re.compile(r"[a-z][a-z0-9_]*")


async def test_every_body_and_event_field_is_snake_case(offline_api: Api) -> None:
    # One casing on the wire: every property of every documented body and event.
    document = (await offline_api.get("/api/openapi.json")).json()
    found: list[str] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            properties = node.get("properties")
            if isinstance(properties, dict):
                found.extend(f"{where}.{name}" for name in properties if not SNAKE.fullmatch(name))
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for value in node:
                walk(value, where)

    walk(document, "")
    assert found == []


async def test_the_run_request_documents_its_webhook(offline_api: Api) -> None:
    document = (await offline_api.get("/api/openapi.json")).json()
    schemas = document["components"]["schemas"]
    field = schemas["RunRequestBody"]["properties"]["webhook"]
    assert {"$ref": "#/components/schemas/WebhookRequestBody"} in field["anyOf"]
    webhook = schemas["WebhookRequestBody"]
    assert webhook["required"] == ["url"] and webhook["additionalProperties"] is False
    assert webhook["properties"]["url"]["maxLength"] == 2048
    assert set(webhook["properties"]) == {"url", "token", "format"}
