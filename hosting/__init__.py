"""Hosting: the agents onto Azure Durable Functions (one entity per session, the HTTP API,
orchestration helpers, and `Extension` for an app's own routes and orchestrators)."""

from ._app import build_app
from ._entity import ENTITY_PREFIX, OPERATIONS, AgentEntity, entity_name
from ._errors import (
    PROBLEMS,
    AgentRunFailed,
    HostingError,
    InvalidOperation,
    ProblemCode,
    ProblemError,
    RunConflict,
)
from ._extensions import Extension, Handler, parse_body
from ._http import ApiSettings
from ._models import Problem, RunRequestBody, RunResultBody, WholeNumber
from ._openapi import openapi_document
from ._orchestration import AgentHandle, get_agent
from ._problems import json_response
from ._requests import MAX_BODY_BYTES, check_id
from ._routes import BAD_REQUEST, UNAVAILABLE, Operation, Param, RouteSpec
from ._routes import Response as RouteResponse
from ._telemetry import configure_telemetry, with_trace_context

__all__ = [
    "BAD_REQUEST",
    "ENTITY_PREFIX",
    "MAX_BODY_BYTES",
    "OPERATIONS",
    "PROBLEMS",
    "UNAVAILABLE",
    "AgentEntity",
    "AgentHandle",
    "AgentRunFailed",
    "ApiSettings",
    "Extension",
    "Handler",
    "HostingError",
    "InvalidOperation",
    "Operation",
    "Param",
    "Problem",
    "ProblemCode",
    "ProblemError",
    "RouteResponse",
    "RouteSpec",
    "RunConflict",
    "RunRequestBody",
    "RunResultBody",
    "WholeNumber",
    "build_app",
    "check_id",
    "configure_telemetry",
    "entity_name",
    "get_agent",
    "json_response",
    "openapi_document",
    "parse_body",
    "with_trace_context",
]
