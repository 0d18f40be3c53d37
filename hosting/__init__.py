"""Hosting: the agents onto Azure Durable Functions (one entity per session, the HTTP API,
orchestration helpers, and `Extension` for an app's own routes and orchestrators)."""

from ._app import build_app
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
from ._ids import ENTITY_PREFIX, entity_name
from ._orchestration import AgentHandle, get_agent
from ._settings import ApiSettings
from ._telemetry import configure_telemetry, with_trace_context
from .entity import OPERATIONS, AgentEntity
from .http import (
    BAD_REQUEST,
    MAX_BODY_BYTES,
    UNAVAILABLE,
    Operation,
    Param,
    Problem,
    RouteResponse,
    RouteSpec,
    RunRequestBody,
    RunResultBody,
    WholeNumber,
    check_id,
    json_response,
    openapi_document,
)

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
