"""The review workflow: a writer drafts, a reviewer critiques until it approves, a human signs off.

Wire it in explicitly: ``build_app(agents, extensions=[review_workflow()])`` (function_app.py does).
"""

from ._api import ROUTES, WorkflowApprovalBody, WorkflowListBody, WorkflowStartBody, WorkflowStatusBody
from ._extension import review_workflow
from ._review import REVIEW_SCHEMA, Review
from ._workflow import APPROVAL_EVENT, WORKFLOW_NAME, ReviewWorkflow, make_orchestrator

__all__ = [
    "APPROVAL_EVENT",
    "REVIEW_SCHEMA",
    "ROUTES",
    "WORKFLOW_NAME",
    "Review",
    "ReviewWorkflow",
    "WorkflowApprovalBody",
    "WorkflowListBody",
    "WorkflowStartBody",
    "WorkflowStatusBody",
    "make_orchestrator",
    "review_workflow",
]
