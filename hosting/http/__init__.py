"""The HTTP edge: the streaming-types adapter, routes and their models, the OpenAPI document,
problems, the agent routes' handlers, the answers they render runs with, and SSE."""

from ._answers import Answers
from ._api import Api, describe_agent, guarded
from ._edge import INIT_INDEXING_SETTING, Request, Response, check_init_indexing, serve
from ._erasure import UserErasure
from ._export import UserExport
from ._history import history
from ._lookup import hosted_agent
from ._memories import UserMemories
from ._models import Problem, RunRequestBody, RunResultBody, WholeNumber
from ._openapi import openapi_document
from ._problems import json_response, problem_response, validation_problem
from ._refusals import refusal, refused
from ._requests import (
    CORRELATION_HEADER,
    MAX_BODY_BYTES,
    SESSION_HEADER,
    check_id,
    derived_request,
    parse_json_object,
    resume_after,
    wants_event_stream,
)
from ._routes import AGENT_ROUTES, BAD_REQUEST, UNAVAILABLE, Operation, Param, RouteSpec
from ._routes import Response as RouteResponse
from ._sessions import SessionsApi
from ._sse import (
    EVENT_STREAM,
    RunStreams,
    SseEvent,
    read_sse_events,
    sse_frame,
)
from ._user_routes import USER_ROUTES
from ._users import acting_user, caller_user, check_user_id, easy_auth_enabled, principal_of

__all__ = [
    "AGENT_ROUTES",
    "BAD_REQUEST",
    "CORRELATION_HEADER",
    "EVENT_STREAM",
    "INIT_INDEXING_SETTING",
    "MAX_BODY_BYTES",
    "SESSION_HEADER",
    "UNAVAILABLE",
    "USER_ROUTES",
    "Answers",
    "Api",
    "Operation",
    "Param",
    "Problem",
    "Request",
    "Response",
    "RouteResponse",
    "RouteSpec",
    "RunRequestBody",
    "RunResultBody",
    "RunStreams",
    "SessionsApi",
    "SseEvent",
    "UserErasure",
    "UserExport",
    "UserMemories",
    "WholeNumber",
    "acting_user",
    "caller_user",
    "check_id",
    "check_init_indexing",
    "check_user_id",
    "derived_request",
    "describe_agent",
    "easy_auth_enabled",
    "guarded",
    "history",
    "hosted_agent",
    "json_response",
    "openapi_document",
    "parse_json_object",
    "principal_of",
    "problem_response",
    "read_sse_events",
    "refusal",
    "refused",
    "resume_after",
    "serve",
    "sse_frame",
    "validation_problem",
    "wants_event_stream",
]
