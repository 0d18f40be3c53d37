"""Hosting: the agents onto Azure Durable Functions (one entity per session, the HTTP API,
orchestration helpers and the example review workflow)."""

from ._app import build_app
from ._entity import ENTITY_PREFIX, OPERATIONS, AgentEntity, entity_name
from ._errors import AgentRunFailed, HostingError, InvalidOperation, ProblemError, RunConflict
from ._http import ApiSettings
from ._models import Problem, RunRequestBody, RunResultBody
from ._openapi import openapi_document
from ._orchestration import AgentHandle, get_agent
from ._requests import MAX_BODY_BYTES
from ._telemetry import configure_telemetry, with_trace_context
from ._workflow import APPROVAL_EVENT, REVIEW_SCHEMA, WORKFLOW_NAME, ReviewWorkflow

__all__ = [
    "APPROVAL_EVENT",
    "ENTITY_PREFIX",
    "MAX_BODY_BYTES",
    "OPERATIONS",
    "REVIEW_SCHEMA",
    "WORKFLOW_NAME",
    "AgentEntity",
    "AgentHandle",
    "AgentRunFailed",
    "ApiSettings",
    "HostingError",
    "InvalidOperation",
    "Problem",
    "ProblemError",
    "ReviewWorkflow",
    "RunConflict",
    "RunRequestBody",
    "RunResultBody",
    "build_app",
    "configure_telemetry",
    "entity_name",
    "get_agent",
    "openapi_document",
    "with_trace_context",
]
