"""The review workflow as a `hosting.Extension`: what `function_app.py` passes to `build_app`."""

from __future__ import annotations

from hosting import Extension

from ._api import ROUTES, WorkflowApi
from ._workflow import WORKFLOW_NAME, ReviewWorkflow, make_orchestrator


def review_workflow(workflow: ReviewWorkflow | None = None) -> Extension:
    """The review workflow's orchestrator and HTTP routes, for `build_app(..., extensions=[...])`.

    `workflow` names the writer and reviewer agents (default `writer` and `reviewer`); both must
    be hosted, or `build_app` raises `AgentConfigurationError`.
    """
    chosen = workflow or ReviewWorkflow()
    return Extension(
        name="review workflow",
        routes=ROUTES,
        handlers=lambda settings: WorkflowApi(settings).handlers(),
        orchestrators={WORKFLOW_NAME: make_orchestrator(chosen)},
        requires_agents=(chosen.writer, chosen.reviewer),
    )
