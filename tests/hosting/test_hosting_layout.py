"""The public names of hosting's subpackages (each `__init__.py` re-exports them in `__all__`),
and the layout's rules: no import circle, subpackages reach each other only through their
`__init__.py`, the stored document read in one module."""

from __future__ import annotations

import importlib
import json
import pathlib
import subprocess
import sys
from typing import Any

import pytest
from hosting_support import ROOT

PINNED = {
    "hosting.entity": [
        "AgentEntity",
        "EntityContext",
        "Loaded",
        "OPERATIONS",
        "RunDiscarded",
        "guarded_batch",
        "TimeLimits",
    ],
    "hosting.client": [
        "BoundClient",
        "ReadPacer",
        "Accepted",
        "Answered",
        "ContinuationRefused",
        "DurableClient",
        "NoQueryEndpoint",
        "PENDING",
        "Prepared",
        "RUN_OPERATION",
        "Refused",
        "RunOutcome",
        "SameRequest",
        "Snapshot",
        "Submission",
        "Submitted",
        "Submitter",
        "durable_client_input",
        "entity_key",
        "find_archived_run",
        "query_entities",
        "query_instances",
        "read_session",
        "rpc_base_url",
        "session_entity",
        "state_problem",
        "wait_for_run",
        "checked_state",
        "owned_sessions",
        "read_pacer",
        "snapshot_outcome",
        "Answerable",
        "Awaiting",
        "Busy",
        "Conflict",
        "Discarded",
        "Finished",
        "Full",
        "Hidden",
        "HistoryMissing",
        "Pending",
        "Refusal",
        "Unreadable",
        "answered_id",
    ],
    "hosting.lifecycle": [
        "CLEANUP",
        "DEFAULT_TTL",
        "ERASURE",
        "EXPIRY",
        "FORGET",
        "SWEEP",
        "SWEEPER",
        "TTL_ENV",
        "due_at",
        "ensure_sweepers",
        "erasure_instance",
        "expires_at",
        "expiry_instance",
        "register_lifecycle",
        "reset_or_delete",
        "start_approval_expiry",
        "sweep_interval",
        "sweeper_instance",
        "sweepers_of",
        "ttl_for",
        "ERASE_DELETE_KEY",
        "approval_timeout",
        "approvals_due",
        "start_session_ended",
    ],
    "hosting.responses": ["RESPONSES_ROUTES", "responses_api", "RunRef", "decode_response_id"],
    "hosting.a2a": ["A2A_FORMAT", "A2A_ROUTES", "a2a_api"],
    "hosting.agui": ["AGUI_ROUTES", "agui_api"],
    "hosting.http": [
        "Answers",
        "Api",
        "CORRELATION_HEADER",
        "IDEMPOTENCY_HEADER",
        "EVENT_STREAM",
        "INIT_INDEXING_SETTING",
        "Operation",
        "Request",
        "Response",
        "RouteResponse",
        "RouteSpec",
        "RunStreams",
        "SESSION_HEADER",
        "SseEvent",
        "HEARTBEAT",
        "StreamEnded",
        "StreamLive",
        "StreamOnce",
        "StreamOpened",
        "RunArgs",
        "run_call",
        "RunAccepted",
        "RunFinished",
        "RunStreamed",
        "RunSubmitted",
        "Cancelled",
        "Decided",
        "approval_decision",
        "caller_user",
        "check_init_indexing",
        "describe_agent",
        "easy_auth_enabled",
        "guarded",
        "hosted_agent",
        "json_response",
        "openapi_document",
        "problem_response",
        "refusal",
        "refused",
        "resume_after",
        "serve",
        "sse_frame",
        "wants_event_stream",
        "AGENT_ROUTES",
        "BAD_REQUEST",
        "MAX_BODY_BYTES",
        "Param",
        "Problem",
        "RunRequestBody",
        "RunResultBody",
        "SessionsApi",
        "UNAVAILABLE",
        "USER_ROUTES",
        "UserErasure",
        "UserExport",
        "UserMemories",
        "WholeNumber",
        "acting_user",
        "check_id",
        "check_user_id",
        "history",
        "parse_json_object",
        "principal_of",
        "validation_problem",
    ],
    "hosting.stored": [
        "INTERNAL",
        "Internal",
        "ActiveTurn",
        "UnreadableTurn",
        "active_turn",
        "forget_waiting",
        "keep_approvals",
        "queued_requests",
        "Approval",
        "Decision",
        "RunApprovals",
        "approvals_of",
        "decided_event",
        "recorded_approvals",
        "MAX_DISCARDED_RUNS",
        "MAX_REFUSED_BYTES",
        "REFUSED_MESSAGE",
        "Steer",
        "StoredDocument",
        "StoredRun",
        "TurnEntry",
        "Unrecorded",
        "Viewer",
        "WaitingRun",
        "first_text",
        "refused_result",
        "reset_text",
        "revived_text",
        "tombstone_text",
        "unrecorded_run",
        "with_refused",
        "find_approval",
        "with_decision",
        "with_requested",
    ],
}


@pytest.mark.parametrize("package", sorted(PINNED))
def test_subpackage_all_is_pinned(package: str) -> None:
    module = importlib.import_module(package)
    assert sorted(module.__all__) == sorted(PINNED[package])
    for name in module.__all__:
        assert getattr(module, name) is not None


def _measured(expression: str) -> Any:
    """``expression`` over bench/layout_measures.py (``m``), evaluated in a fresh interpreter.

    The measures parse source with ``ast``, and on CPython before 3.11.8 ``ast.parse`` fails
    ("AST constructor recursion depth mismatch", python/cpython#106905) once hypothesis has
    changed the recursion limit in the process, as the suite's property tests do.
    """
    code = (
        "import ast, json, pathlib, sys; sys.path.insert(0, 'bench'); import layout_measures as m; "
        f"print(json.dumps({expression}))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("package", ["state", "agents", "hosting", "devhost"])
def test_no_import_circle(package: str) -> None:
    assert _measured(f"m.circles(m.import_graph(pathlib.Path('.'), {package!r}))") == []


@pytest.mark.parametrize("package", ["state", "agents", "hosting", "devhost"])
def test_no_import_of_another_subpackages_private_module(package: str) -> None:
    found = _measured(f"m.private_imports(pathlib.Path('.'), {package!r})")
    assert found == [], "import through the package's __init__: " + ", ".join(found)


def test_private_imports_are_found(tmp_path: pathlib.Path) -> None:
    """The measure the test above relies on finds each form of the import it forbids, and none
    of those it allows."""
    files = {
        "__init__.py": "",
        "_top.py": "from .a._x import X\n",  # forbidden: the package's own module, a subpackage's private one
        "a/__init__.py": "from ._x import X\n",
        "a/_x.py": "from .._top import T\nfrom . import _y\nX = 1\n",
        "a/_y.py": "",
        "b/__init__.py": "",
        "b/_z.py": (
            "import hosting.a._x\n"
            "from .. import a\n"
            "from ..a import _y, X\n"
            "def f():\n"
            "    from ..a._x import X\n"
        ),
        "b/c/_w.py": "from ... import _top\nfrom .._z import f\n",
    }
    for name, text in files.items():
        path = tmp_path / "hosting" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert _measured(f"m.private_imports(pathlib.Path({str(tmp_path)!r}), 'hosting')") == [
        "hosting._top -> hosting.a._x",
        "hosting.b._z -> hosting.a._x",
        "hosting.b._z -> hosting.a._y",
    ]


def test_only_the_stored_package_reads_the_documents_wire_keys() -> None:
    readers = _measured(
        "[str(p) for p in sorted(pathlib.Path('hosting').rglob('*.py'))"
        " if m.wire_key_uses(ast.parse(p.read_text(encoding='utf-8')))]"
    )
    assert readers == ["hosting/stored/_document.py"]
