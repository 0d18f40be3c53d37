"""Fuzzing the HTTP API from its own OpenAPI document, over real sockets.

The real app (`hosting.build_app`, agents on an offline `ModelServer`) runs on a `devhost.LocalHost`.
Schemathesis generates schema-valid and schema-violating requests for every operation that
`GET /api/openapi.json` lists; a second generator sends what a schema cannot describe (broken
JSON, other media types, oversized bodies, ids with `@`, `/`, control characters, odd headers,
missing or wrong function keys). Half of the valid ids are aimed at a seeded session and run, so
existing state is exercised too. Properties:

* no 5xx, ever;
* every 4xx is `application/problem+json` with `type`, `title`, `status` (= the HTTP status),
  `code` and a non-empty `detail`;
* every answer's status, content type, headers and body are the ones documented for it
  (schemathesis' response checks), schema-violating requests are rejected and schema-valid
  ones accepted (with the cross-field rules listed in `_SEMANTIC_REJECTIONS`);
* after a rejected request, nothing the host stores changed: entity states byte for byte,
  queued operations, orchestrations.

Bounded (about 150 generated requests plus ~30 fixed ones, ~20 s) and derandomized, so CI runs
the same requests every time; `FUZZ_EXAMPLES=40` makes a longer hunt locally.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import schemathesis
from fuzz_support import (
    FUNCTION_KEY,
    Stored,
    check_problem,
    check_responses_error,
    describe_change,
    read_stored,
    settled,
    threaded_host,
)
from hosting_support import make_agents
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from agents.testing import ModelServer
from devhost import LocalHost
from examples.review import review_workflow
from hosting import build_app

EXAMPLES_PER_OPERATION = int(os.environ.get("FUZZ_EXAMPLES", "5"))
"""Per operation and generation mode: about 100 generated requests, plus 45 hand-shaped ones below.
Raise `FUZZ_EXAMPLES` for a longer hunt on a developer machine; CI keeps the default."""

KEY = {"x-functions-key": FUNCTION_KEY}

# Rejections of schema-valid requests that a JSON schema cannot express: a response format must be
# a usable JSON Schema (validated with `jsonschema`), an Idempotency-Key header excludes a
# `correlation_id` in the body, and `session_id` and its alias `thread_id` (body or query) must
# agree; and free-form text must not hold a lone UTF-16 surrogate escape (JSON Schema strings
# cannot say so). Any other 4xx of a schema-valid request fails the fuzzer.
_SEMANTIC_REJECTIONS = {
    ("invalid_field", "response_format"),
    ("invalid_field", "continuation"),  # a well-formed token the backend never handed out
    ("conflicting_fields", "correlation_id"),
    ("conflicting_fields", "thread_id"),
    ("conflicting_fields", "session_id"),
    ("conflicting_fields", "multitask_strategy"),  # the body and the query ask different strategies
    ("conflicting_fields", "user_id"),  # the body and the query name different users
    ("missing_field", "user_id"),  # a `me/` route, without App Service Authentication, names no user
    ("invalid_field", "cursor"),  # a well-formed memory cursor the API never handed out
    ("invalid_field", "webhook.url"),  # a URL the settings do not allow (no allowlist in this app)
    ("conflicting_fields", "webhook"),  # a webhook on a steer
    *(("invalid_encoding", field) for field in ("message", "response_format", "options")),
}

_FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES_PER_OPERATION,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)


@pytest.fixture(scope="module")
def live_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalHost]:
    """The real app, served over loopback sockets, with an offline model answering every turn."""
    with ModelServer(mode="offline") as server:
        app = build_app(make_agents(server), extensions=[review_workflow()])
        with threaded_host(app, tmp_path_factory.mktemp("fuzz-host")) as host:
            yield host


@pytest.fixture(scope="module")
def api_schema(live_host: LocalHost) -> Any:
    """The app's own OpenAPI document, as served, loaded into schemathesis."""
    answer = requests.get(f"{live_host.url}/api/openapi.json", timeout=10)
    assert answer.status_code == 200, answer.text
    document = answer.json()
    assert document["openapi"].startswith("3.1")
    schema = schemathesis.openapi.from_dict(document)
    # The function key goes in every request; generating keys would only exercise the host's 401.
    schema.config.generation.update(with_security_parameters=False)
    schema.hook("map_query")(_short_polls)
    schema.hook("map_body")(_aim_body)
    schema.hook("map_path_parameters")(_aim_path)
    return schema


SEEDED_SESSION = "fuzz-seeded"
SEEDED_RUN = "fuzz-seeded-run"
AGENTS = ("assistant", "writer", "reviewer")
_VALID_ID = re.compile(r"[A-Za-z0-9._~-]{1,128}")


def _seed(host: LocalHost) -> None:
    """Make sure every agent has the seeded session with one finished run, so generated requests
    also reach existing sessions and runs (random ids alone would only ever find 404s)."""
    stored = {entity for entity, _ in read_stored(host.db_path).entities}
    for agent in AGENTS:
        if f"@dafx-{agent}@{SEEDED_SESSION}" in stored:
            continue
        body = {"message": "seed", "session_id": SEEDED_SESSION, "correlation_id": SEEDED_RUN}
        answer = requests.post(f"{host.url}/api/agents/{agent}/run", json=body, headers=KEY, timeout=30)
        assert answer.status_code == 200, answer.text


def _aimed(value: Any, target: str) -> Any:
    """Half of the valid generated ids (chosen by length, so deterministically) become `target`."""
    if isinstance(value, str) and _VALID_ID.fullmatch(value) and len(value) % 2 == 0:
        return target
    return value


def _aim_path(context: Any, path: dict[str, Any] | None) -> dict[str, Any] | None:
    if path and "session_id" in path:
        path["session_id"] = _aimed(path["session_id"], SEEDED_SESSION)
    if path and "correlation_id" in path:
        path["correlation_id"] = _aimed(path["correlation_id"], SEEDED_RUN)
    return path


def _short_polls(context: Any, query: dict[str, Any] | None) -> dict[str, Any] | None:
    """A valid `?wait=` long-polls up to 60 s for a run that never comes; keep valid waits short
    (out-of-range values stay as generated, they must be rejected at once)."""
    wait = (query or {}).get("wait")
    if query and isinstance(wait, int | float) and not isinstance(wait, bool) and 0 <= wait <= 60:
        query["wait"] = min(query["wait"], 0.2)
    return query


def _aim_body(context: Any, body: Any) -> Any:
    """Aim half of the body's valid session ids at the seeded session. And a started review
    workflow must not time out during a later request: that would change stored state while a
    rejected request is checked."""
    if isinstance(body, dict) and "session_id" in body:
        body["session_id"] = _aimed(body["session_id"], SEEDED_SESSION)
    timeout = body.get("approval_timeout_seconds") if isinstance(body, dict) else None
    if isinstance(timeout, int | float) and not isinstance(timeout, bool) and 1 <= timeout <= 7 * 86_400:
        body["approval_timeout_seconds"] = 7 * 86_400
    return body


def _operations(schema: Any) -> list[Any]:
    return [result.ok() for result in schema.get_all_operations()]


def _assert_rejection_left_state(db: pathlib.Path, before: Stored, label: str, status: int) -> None:
    after = settled(db)
    assert after == before, f"{label}: a {status} changed stored state: {describe_change(before, after)}"


def _fuzz_operation(
    host: LocalHost, operation: Any, mode: GenerationMode, seen: list[tuple[int, str]]
) -> None:
    checks = [
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_headers_conformance,
        response_schema_conformance,
    ]
    if mode is GenerationMode.NEGATIVE:
        checks.append(negative_data_rejection)

    @given(case=operation.as_strategy(generation_mode=mode))
    @_FUZZ_SETTINGS
    def run(case: Any) -> None:
        _seed(host)
        before = settled(host.db_path)
        response = case.call(base_url=host.url, headers=KEY, timeout=30)
        seen.append((response.status_code, operation.label))
        case.validate_response(response, checks=checks, headers=KEY)
        status = response.status_code
        assert status < 500, f"{operation.label}: {status} {response.text[:300]}"
        if 400 <= status < 500 and _runtime_not_found(case, status, response.content):
            # Documented in the OpenAPI document: the Python runtime's HTTP streams server answers a
            # path segment holding a control character itself, before the app runs (in Azure too).
            _assert_rejection_left_state(host.db_path, before, operation.label, status)
        elif 400 <= status < 500 and "/v1/responses" in operation.label:
            # The Responses API's own error shape; it documents no request schema (its fields are
            # checked one by one, docs/protocols.md), so no 400 of it is a schema-valid rejection.
            content_type = (response.headers.get("content-type") or [""])[0]
            check_responses_error(status, content_type, response.content)
            _assert_rejection_left_state(host.db_path, before, operation.label, status)
        elif 400 <= status < 500:
            content_type = (response.headers.get("content-type") or [""])[0]
            problem = check_problem(status, content_type, response.content)
            # The AG-UI route's body is the protocol's RunAgentInput, read with its own model and
            # not restated in this document: any body the fuzzer sends is unschema'd there.
            documented = "/ag-ui" not in operation.label
            if documented and mode is GenerationMode.POSITIVE and status in (400, 413, 415):
                rule = (problem["code"], problem.get("field"))
                assert rule in _SEMANTIC_REJECTIONS, (
                    f"{operation.label}: schema-valid request rejected: {problem}"
                )
            _assert_rejection_left_state(host.db_path, before, operation.label, status)

    run()


def _runtime_not_found(case: Any, status: int, body: bytes) -> bool:
    """The runtime's HTTP server's own 404, for a path parameter with a control character only."""
    values = [urllib.parse.unquote(str(v)) for v in (case.path_parameters or {}).values()]
    odd_path = any(ch < " " or ch == "\x7f" for v in values for ch in v)
    return odd_path and status == 404 and body == b'{"detail":"Not Found"}'


def test_every_documented_operation_survives_generated_requests(
    live_host: LocalHost, api_schema: Any
) -> None:
    operations = _operations(api_schema)
    labels = {op.label for op in operations}
    # The fuzzer covers the whole document, so a new route is fuzzed without editing this test.
    assert "POST /api/agents/{agent}/run" in labels and len(labels) >= 8, labels
    seen: list[tuple[int, str]] = []
    for operation in operations:
        _fuzz_operation(live_host, operation, GenerationMode.POSITIVE, seen)
        has_inputs = bool(operation.path_parameters or operation.query or operation.headers or operation.body)
        if has_inputs:
            _fuzz_operation(live_host, operation, GenerationMode.NEGATIVE, seen)
    print("fuzzed:", sorted(Counter(seen).items(), key=lambda item: item[0][1]))
    statuses = {status for status, _ in seen}
    # Guard against a fuzzer that silently stopped exercising anything: it must have seen
    # successes and rejections of several kinds.
    assert {200, 400, 404} <= statuses, sorted(statuses)
    assert len(seen) >= 60, len(seen)


# -- what a schema cannot describe ---------------------------------------------------------------

_BAD_ID_CHARS = st.sampled_from(["@", "/", "\x00", "\n", "\x7f", " ", "é", "\u202e", "%", "#", "?", "\\"])
_bad_ids = st.one_of(
    st.builds(
        lambda a, c, b: a + c + b, st.text("abc", max_size=3), _BAD_ID_CHARS, st.text("xyz", max_size=3)
    ),
    st.just(""),
    st.just("a" * 129),
    st.integers(),
    st.booleans(),
    st.none().map(lambda _: ["list"]),
)


def _json_body(**fields: Any) -> tuple[str, bytes, dict[str, str]]:
    return ("json", json.dumps(fields).encode(), {"Content-Type": "application/json"})


_malformed_run_bodies = st.one_of(
    st.sampled_from(
        [
            ("broken json", b'{"message": "hi"', {"Content-Type": "application/json"}),
            ("not an object", b'["hi"]', {"Content-Type": "application/json"}),
            ("json null", b"null", {"Content-Type": "application/json"}),
            ("empty", b"", {"Content-Type": "application/json"}),
            ("bad utf-8", b'{"message": "\xff\xfe"}', {"Content-Type": "application/json"}),
            ("xml", b"<message>hi</message>", {"Content-Type": "application/xml"}),
            ("form", b"message=hi", {"Content-Type": "application/x-www-form-urlencoded"}),
            ("huge", json.dumps({"message": "x" * 300_000}).encode(), {"Content-Type": "application/json"}),
            ("huge text", b"y" * 300_000, {"Content-Type": "text/plain"}),
            ("blank text", b"  \n ", {"Content-Type": "text/plain"}),
            ("blank message", *_json_body(message="   ")[1:]),
            ("unknown field", *_json_body(message="hi", mesage="typo")[1:]),
            ("bad role", *_json_body(message="hi", role="tool")[1:]),
            ("bad wait header", *_json_body(message="hi")[1:]),
            (
                "nan",
                b'{"message": "hi", "options": {"temperature": NaN}}',
                {"Content-Type": "application/json"},
            ),
            (
                "deep",
                b'{"message": "hi", "options": {"a": ' + b"[" * 5000 + b"]" * 5000 + b"}}",
                {"Content-Type": "application/json"},
            ),
        ]
    ),
    st.builds(
        lambda key, value: (
            "wrong type",
            json.dumps({"message": "hi", key: value}).encode(),
            {"Content-Type": "application/json"},
        ),
        st.sampled_from(["message", "wait_for_response", "response_format", "options", "role"]),
        st.one_of(st.integers(), st.lists(st.integers(), max_size=2), st.floats(allow_nan=False)),
    ),
    st.builds(
        lambda field, value: (
            "bad id",
            json.dumps({"message": "hi", field: value}).encode(),
            {"Content-Type": "application/json"},
        ),
        st.sampled_from(["session_id", "thread_id", "correlation_id"]),
        _bad_ids,
    ),
)

_HEADER_VARIANTS: list[dict[str, str]] = [
    {},
    {"x-ms-wait-for-response": "perhaps"},
    {"Idempotency-Key": "k\u00e9y"},
    {"Idempotency-Key": "x" * 129},
    {"Idempotency-Key": ""},
]


def _request(
    host: LocalHost, method: str, path: str, body: bytes, headers: dict[str, str]
) -> requests.Response:
    return requests.request(method, f"{host.url}{path}", data=body, headers={**KEY, **headers}, timeout=30)


def _quoted(segment: str) -> str:
    from urllib.parse import quote

    return quote(segment, safe="")


@given(
    case=_malformed_run_bodies,
    extra=st.sampled_from(_HEADER_VARIANTS),
    agent=st.sampled_from(["assistant", "nobody", "ASSISTANT"]),
)
@settings(
    max_examples=25,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_malformed_run_requests_are_problems_that_touch_nothing(
    live_host: LocalHost, case: tuple[str, bytes, dict[str, str]], extra: dict[str, str], agent: str
) -> None:
    label, body, headers = case
    if label == "bad wait header":
        extra = {"x-ms-wait-for-response": "maybe"}
    before = settled(live_host.db_path)
    response = _request(live_host, "POST", f"/api/agents/{agent}/run", body, {**headers, **extra})
    assert 400 <= response.status_code < 500, (label, extra, response.status_code, response.text[:300])
    problem = check_problem(response.status_code, response.headers.get("content-type", ""), response.content)
    if agent != "assistant":  # agent names in URLs are exact
        assert (response.status_code, problem["code"]) == (404, "unknown_agent"), problem
    elif label.startswith("huge"):
        assert (response.status_code, problem["code"]) == (413, "body_too_large"), problem
    elif label in ("xml", "form"):
        assert (response.status_code, problem["code"]) == (415, "unsupported_media_type"), problem
    else:
        assert response.status_code == 400, problem
        assert problem.get("field"), problem  # a 400 names what to fix
    _assert_rejection_left_state(live_host.db_path, before, label, response.status_code)


_ID_ROUTES: list[tuple[str, str, str]] = [
    ("GET", "/api/agents/assistant/sessions/{bad}", "session_id"),
    ("DELETE", "/api/agents/assistant/sessions/{bad}", "session_id"),
    ("POST", "/api/agents/assistant/sessions/{bad}/reset", "session_id"),
    ("GET", "/api/agents/assistant/sessions/{bad}/runs/abc", "session_id"),
    ("GET", "/api/agents/assistant/sessions/abc/runs/{bad}", "correlation_id"),
    ("GET", "/api/workflows/review/{bad}", "instance_id"),
    ("POST", "/api/workflows/review/{bad}/approval", "instance_id"),
    ("GET", "/api/users/{bad}/memories", "user_id"),
    ("GET", "/api/users/{bad}/export", "user_id"),
    ("DELETE", "/api/users/u1/memories/{bad}", "memory_id"),
    ("DELETE", "/api/me/memories/{bad}?user_id=u1", "memory_id"),
]


@given(
    route=st.sampled_from(_ID_ROUTES),
    bad=st.builds(lambda a, c: a + c, st.text("ab", max_size=2), _BAD_ID_CHARS) | st.just("a" * 129),
)
@settings(
    max_examples=20,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_bad_ids_in_paths_are_problems_that_touch_nothing(
    live_host: LocalHost, route: tuple[str, str, str], bad: str
) -> None:
    method, template, field = route
    path = template.format(bad=_quoted(bad))
    body = b'{"approved": true}' if path.endswith("/approval") else b""
    before = settled(live_host.db_path)
    response = _request(live_host, method, path, body, {"Content-Type": "application/json"})
    if "\n" in bad and response.status_code == 404 and response.content == b'{"detail":"Not Found"}':
        # Documented in the OpenAPI document: the Python runtime's HTTP streams server answers a
        # segment holding a newline itself, before the app runs (in Azure too).
        _assert_rejection_left_state(live_host.db_path, before, f"{method} {path}", 404)
        return
    problem = check_problem(response.status_code, response.headers.get("content-type", ""), response.content)
    # An encoded '/' may split the segment so no route fits (as on the Functions host): a 404
    # problem from the router. Anything else is a 400 naming the id.
    if not ("/" in bad and response.status_code == 404):
        assert (response.status_code, problem.get("field")) == (400, field), (method, path, problem)
    _assert_rejection_left_state(live_host.db_path, before, f"{method} {path}", response.status_code)


@pytest.mark.parametrize(
    "credentials",
    [{}, {"headers": {"x-functions-key": "wrong"}}, {"params": {"code": "wrong"}}],
    ids=["no key", "wrong header key", "wrong query key"],
)
def test_keyed_operations_refuse_a_missing_or_wrong_key_and_touch_nothing(
    live_host: LocalHost, credentials: dict[str, Any]
) -> None:
    _seed(live_host)
    document = requests.get(f"{live_host.url}/api/openapi.json", timeout=10).json()
    keyed = [
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if operation["security"]
    ]
    assert len(keyed) >= 8, keyed
    for method, template in keyed:
        path = re.sub(r"\{(\w+)\}", lambda m: "assistant" if m[1] == "agent" else SEEDED_SESSION, template)
        before = settled(live_host.db_path)
        body = json.dumps({"message": "hi", "topic": "t", "approved": True})
        response = requests.request(
            method,
            f"{live_host.url}{path}",
            data=body,
            headers={"Content-Type": "application/json", **credentials.get("headers", {})},
            params=credentials.get("params"),
            timeout=30,
        )
        assert response.status_code == 401, (method, path, response.status_code, response.text[:200])
        check_problem(401, response.headers.get("content-type", ""), response.content)
        _assert_rejection_left_state(live_host.db_path, before, f"{method} {path}", 401)
