"""The protocol edges submit runs with typed values, on the run route's own checks.

`run_call` is the one builder of a run: the route reads its HTTP request into `RunArgs`, an edge
fills them from its own wire format, and both get the same problems for the same values. No edge
builds a product HTTP request (`derived_request`) or reads the product's SSE bytes back
(`read_sse_events`): each converts its wire format in and a typed value out.
"""

from __future__ import annotations

import ast
import json
import pathlib
from typing import Any

import azure.functions as func
import pytest
from hosting_support import ROOT

from hosting._errors import ProblemCode, ProblemError
from hosting.http import RunArgs, run_call
from hosting.http._requests import parse_run

EDGES = ("a2a", "responses", "agui")
GONE = {"derived_request", "read_sse_events"}
"""Names of the conversion done and undone: a product request built and its answer read back."""
ROUTE_HANDLERS = {"run", "run_approval", "run_cancel"}
"""The product's HTTP handlers, which take an HTTP request: an edge calls the typed entries."""


def _edge_modules() -> list[pathlib.Path]:
    return [p for edge in EDGES for p in sorted((ROOT / "hosting" / edge).glob("*.py"))]


@pytest.mark.parametrize("path", _edge_modules(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_edge_builds_a_product_request_or_reads_its_sse(path: pathlib.Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    attributes = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert not (names | attributes) & GONE
    called = {
        n.func.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Attribute) and n.func.value.attr == "api"
    }  # fmt: skip
    assert not called & ROUTE_HANDLERS, f"{path.name} calls the HTTP handlers {called & ROUTE_HANDLERS}"


def test_the_gone_names_are_gone_from_hosting_http() -> None:
    import hosting.http

    assert not GONE & set(dir(hosting.http))


def _route(body: dict[str, Any], headers: dict[str, str] | None = None) -> ProblemError:
    req = func.HttpRequest(
        "POST",
        "http://localhost/api/agents/assistant/run",
        headers={"content-type": "application/json", **(headers or {})},
        params={},
        route_params={"agent": "assistant"},
        body=json.dumps(body).encode(),
    )
    with pytest.raises(ProblemError) as raised:
        parse_run(req, "assistant")
    return raised.value


def _edge(args: RunArgs) -> ProblemError:
    with pytest.raises(ProblemError) as raised:
        run_call("assistant", args)
    return raised.value


@pytest.mark.parametrize(
    ("body", "headers", "args"),
    [
        ({"message": " "}, None, RunArgs(message=" ")),
        ({"message": "hi", "session_id": "bad id!"}, None, RunArgs(message="hi", session_id="bad id!")),
        (
            {"message": "hi", "correlation_id": "x" * 300},
            None,
            RunArgs(message="hi", correlation_id="x" * 300),
        ),
        (
            {"message": "hi", "options": {"temperature": 3}},
            None,
            RunArgs(message="hi", options={"temperature": 3}),
        ),
        (
            {"message": "hi", "options": {"max_output_tokens": 0}},
            None,
            RunArgs(message="hi", options={"max_output_tokens": 0}),
        ),
        (
            {"message": "hi"},
            {"Idempotency-Key": "bad key!"},
            RunArgs(message="hi", idempotency_key="bad key!"),
        ),
        (
            {"message": "hi", "correlation_id": "c1"},
            {"Idempotency-Key": "k1"},
            RunArgs(message="hi", correlation_id="c1", idempotency_key="k1"),
        ),
        (
            {"message": "hi", "response_format": {"type": "nonsense"}},
            None,
            RunArgs(message="hi", response_format={"type": "nonsense"}),
        ),
    ],
    ids=["blank", "session id", "correlation id", "temperature", "tokens", "key", "key and id", "format"],
)
def test_an_edge_gets_the_routes_problem_for_the_same_values(
    body: dict[str, Any], headers: dict[str, str] | None, args: RunArgs
) -> None:
    route, edge = _route(body, headers), _edge(args)
    shown = (edge.code, edge.field, edge.detail, edge.status)
    assert shown == (route.code, route.field, route.detail, route.status)
    assert edge.extensions == route.extensions


def test_a_steer_run_is_refused_a_stream_by_the_builder() -> None:
    problem = _edge(RunArgs(message="hi", multitask_strategy="steer", event_stream=True))
    assert (problem.code, problem.field) == (ProblemCode.INVALID_FIELD, "multitask_strategy")


def test_an_idempotency_key_derives_the_same_ids_as_on_the_route() -> None:
    first = run_call("assistant", RunArgs(message="hi", idempotency_key="k-1", user_id="u1"))
    again = run_call("assistant", RunArgs(message="hi again", idempotency_key="k-1", user_id="u1"))
    assert (first.session_id, first.correlation_id) == (again.session_id, again.correlation_id)
    assert first.retry_safe and first.new_session and not first.fresh_session
