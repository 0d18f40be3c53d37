"""The review workflow is registered only when an app wires it in, and checks its agents then."""

from __future__ import annotations

import azure.durable_functions as df
import pytest
from hosting_support import Api, all_functions, make_agents

from agents import AgentConfigurationError
from agents.testing import ModelServer
from examples.catalog import AGENTS
from examples.review import REVIEW_SCHEMA, ROUTES, Review, ReviewWorkflow, review_workflow
from hosting import build_app, openapi_document


def _names(app: df.DFApp) -> set[str]:
    return {f.get_function_name() for f in all_functions(app)}


def test_workflow_is_registered_only_when_wired_in_with_a_writer_and_a_reviewer(
    model_server: ModelServer,
) -> None:
    agents = make_agents(model_server)
    assert "review_workflow" in _names(build_app(agents, extensions=[review_workflow()]))
    # No silent registration: hosting a writer and a reviewer is not asking for the workflow.
    plain = build_app(agents)
    assert "review_workflow" not in _names(plain)
    assert not any(n.startswith("workflow_") for n in _names(plain))
    only_assistant = build_app(agents[:1])
    assert "review_workflow" not in _names(only_assistant)
    with pytest.raises(AgentConfigurationError, match="writer"):
        build_app(agents[:1], extensions=[review_workflow()])
    with pytest.raises(AgentConfigurationError, match="critic"):
        build_app(agents, extensions=[review_workflow(ReviewWorkflow(writer="writer", reviewer="critic"))])
    with pytest.raises(AgentConfigurationError, match="second function 'workflow_review_start'"):
        build_app(agents, extensions=[review_workflow(), review_workflow()])


async def test_the_routes_are_documented_from_the_route_table(api: Api) -> None:
    document = (await api.get("/api/openapi.json")).json()
    workflow_paths = sorted(p for p in document["paths"] if p.startswith("/api/workflows/"))
    assert workflow_paths == sorted(openapi_document(ROUTES)["paths"]) == [
        "/api/workflows/review",
        "/api/workflows/review/{instance_id}",
        "/api/workflows/review/{instance_id}/approval",
    ]
    start = document["paths"]["/api/workflows/review"]["post"]
    assert start["tags"] == ["workflows"] and "400" in start["responses"]
    assert "WorkflowStartBody" in document["components"]["schemas"]


def test_the_review_schema_is_written_once() -> None:
    assert Review.model_json_schema() == REVIEW_SCHEMA
    reviewer = next(a for a in AGENTS if a.name == "reviewer")
    assert reviewer.format is not None and reviewer.format.schema == REVIEW_SCHEMA
    assert reviewer.format.model is Review


def test_catalog_is_importable_and_names_are_unique() -> None:
    names = [a.name for a in AGENTS]
    assert len(names) == len(set(names)) >= 4
    assert {"assistant", "writer", "reviewer"} <= set(names)
    for name in names:
        assert name == name.lower() and all(ch.isalnum() or ch == "-" for ch in name)
