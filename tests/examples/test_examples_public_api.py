"""The public names of `examples.review`, pinned (function_app.py and the docs use them)."""

from __future__ import annotations

import examples.review


def test_all_is_pinned() -> None:
    assert sorted(examples.review.__all__) == [
        "APPROVAL_EVENT",
        "REVIEW_SCHEMA",
        "ROUTES",
        "Review",
        "ReviewWorkflow",
        "WORKFLOW_NAME",
        "WorkflowApprovalBody",
        "WorkflowListBody",
        "WorkflowStartBody",
        "WorkflowStatusBody",
        "make_orchestrator",
        "review_workflow",
    ]
    for name in examples.review.__all__:
        assert getattr(examples.review, name) is not None
