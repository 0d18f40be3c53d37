"""The OpenAPI 3.1 document of the routes an app registers, generated from the route table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from agents import FailureCode

from .._errors import MODEL_FAILURE_STATUS, PROBLEMS
from .._ids import ID_PATTERN_TEXT
from ..streams import EVENT_STREAM, event_stream_content
from ._models import Problem
from ._routes import Operation, Response, RouteSpec

_REF = "#/components/schemas/{model}"
NDJSON = "application/x-ndjson"
"""The media type of a response of JSON lines (an export)."""


def _models(specs: Sequence[RouteSpec]) -> list[tuple[type[BaseModel], JsonSchemaMode]]:
    seen: dict[tuple[type[BaseModel], str], None] = {(Problem, "serialization"): None}
    for spec in specs:
        for op in spec.operations:
            if op.request is not None:
                seen[(op.request, "validation")] = None
            for response in op.responses:
                if response.model is not None:
                    seen[(response.model, "serialization")] = None
    return [(model, "validation" if mode == "validation" else "serialization") for model, mode in seen]


def problem_codes() -> list[dict[str, Any]]:
    """Every problem code of ours with its status and title, in `PROBLEMS` order (the document's
    `x-problem-codes`; docs/hosting.md lists the same, a test holds them equal)."""
    return [
        {"code": str(code), "status": status, "title": title} for code, (status, title) in PROBLEMS.items()
    ]


def _with_codes(schemas: dict[str, Any]) -> dict[str, Any]:
    # The problem's `code` is open (a failed model call carries the service's own code), so the
    # known codes are listed as examples and in the description rather than as an enum.
    code = schemas.get("Problem", {}).get("properties", {}).get("code")
    if code is not None:
        code["description"] = (
            "Stable, machine-readable: one of `x-problem-codes` (status and title listed there), or on a "
            f"{MODEL_FAILURE_STATUS} the failed model call's code (`x-model-failure-codes` or the model "
            "service's own)."
        )
        code["examples"] = [str(c) for c in PROBLEMS]
    return schemas


def _path_schema(name: str, agent_names: Sequence[str]) -> dict[str, Any]:
    if name == "agent" and agent_names:
        return {"type": "string", "enum": list(agent_names)}
    if name in ("session_id", "correlation_id", "instance_id", "user_id", "memory_id"):
        return {"type": "string", "pattern": ID_PATTERN_TEXT}
    if name == "response_id":  # the Responses API's run ids (hosting.responses)
        return {"type": "string", "pattern": "^resp_[A-Za-z0-9_-]+$"}
    return {"type": "string"}


_RUNTIME_NOT_FOUND = {
    "type": "object",
    "properties": {"detail": {"type": "string", "const": "Not Found"}},
    "required": ["detail"],
}


def _runtime_not_found(responses: dict[str, Any]) -> None:
    """A path the Functions host routes to the app but the Python runtime's HTTP streams server
    (FastAPI) cannot (a control character such as an encoded newline in a path segment) is
    answered by that server, before the app runs: 404 `{"detail": "Not Found"}`, in Azure as on
    the local host. Documented so that clients expect it."""
    entry = responses.setdefault(
        "404", {"description": "no such resource", "content": {}}
    )
    content = entry.setdefault("content", {})
    own = content.get("application/json")  # a route whose 404 is JSON already (the Responses API's)
    schema = _RUNTIME_NOT_FOUND if own is None else {"anyOf": [own["schema"], _RUNTIME_NOT_FOUND]}
    content["application/json"] = {"schema": schema}


def _content(response: Response) -> dict[str, Any]:
    """The media types of one documented response."""
    if response.model is not None:
        content: dict[str, Any] = {
            "application/json": {"schema": {"$ref": _REF.format(model=response.model.__name__)}}
        }
        if response.events:
            content[EVENT_STREAM] = event_stream_content()
        return content
    if response.events:
        return {EVENT_STREAM: event_stream_content()}
    if response.lines is not None:
        return {NDJSON: {"schema": {"type": "string", "description": response.lines}}}
    if response.status >= 400:
        return {"application/problem+json": {"schema": {"$ref": _REF.format(model="Problem")}}}
    return {"application/json": {"schema": {"type": "object"}}}


def _operation(spec: RouteSpec, op: Operation, agent_names: Sequence[str]) -> dict[str, Any]:
    params: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": _path_schema(name, agent_names)}
        for name in spec.path_params
    ]
    params += [
        {"name": p.name, "in": "query", "required": False, "description": p.description, "schema": p.schema}
        for p in op.query
    ]
    params += [
        {"name": p.name, "in": "header", "required": False, "description": p.description, "schema": p.schema}
        for p in op.headers
    ]
    responses: dict[str, Any] = {}
    for response in op.responses:
        entry: dict[str, Any] = {"description": response.description}
        if not response.empty:
            entry["content"] = _content(response)
        responses[str(response.status)] = entry
    if spec.path_params:
        _runtime_not_found(responses)
    document: dict[str, Any] = {
        "operationId": f"{spec.function}_{op.method.lower()}",
        "summary": op.summary,
        "tags": [spec.group],
        "responses": responses,
    }
    if params:
        document["parameters"] = params
    if op.request is not None:
        body: dict[str, Any] = {
            "application/json": {"schema": {"$ref": _REF.format(model=op.request.__name__)}}
        }
        if op.text_body:
            body["text/plain"] = {"schema": {"type": "string", "minLength": 1}}
        document["requestBody"] = {"required": True, "content": body}
    document["security"] = [] if spec.anonymous else [{"functionKey": []}, {"functionKeyQuery": []}]
    return document


def openapi_document(
    specs: Sequence[RouteSpec],
    *,
    route_prefix: str = "api",
    title: str = "Durable agents",
    version: str = "1.0.0",
    agent_names: Sequence[str] = (),
) -> dict[str, Any]:
    """The OpenAPI 3.1 document describing exactly `specs` under `/{route_prefix}` (`agent_names`
    become the `{agent}` parameter's enum)."""
    prefix = f"/{route_prefix}" if route_prefix else ""
    paths: dict[str, dict[str, Any]] = {}
    for spec in specs:
        item = paths.setdefault(f"{prefix}/{spec.route}", {})
        for op in spec.operations:
            item[op.method.lower()] = _operation(spec, op, agent_names)
    _, schemas = models_json_schema(_models(specs), ref_template=_REF)
    location: Literal["header"] = "header"
    return {
        "openapi": "3.1.0",
        "info": {
            "title": title,
            "version": version,
            "description": "AI agents hosted as durable entities, one entity instance per session.",
        },
        "paths": paths,
        "x-problem-codes": problem_codes(),
        "x-model-failure-codes": [str(c) for c in FailureCode],
        "components": {
            "schemas": _with_codes(schemas.get("$defs", {})),
            "securitySchemes": {
                "functionKey": {"type": "apiKey", "in": location, "name": "x-functions-key"},
                "functionKeyQuery": {"type": "apiKey", "in": "query", "name": "code"},
            },
        },
    }
