"""The HTTP edge: the streaming-types adapter, routes and their models, the OpenAPI document,
problems, the agent routes' handlers, the answers they render runs with, and SSE."""

from ._answers import Answers
from ._api import Api, describe_agent, guarded
from ._approvals import Decided, approval_decision
from ._cancel import Cancelled
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
    IDEMPOTENCY_HEADER,
    MAX_BODY_BYTES,
    SESSION_HEADER,
    RunArgs,
    check_id,
    parse_json_object,
    resume_after,
    run_call,
    wants_event_stream,
)
from ._routes import AGENT_ROUTES, BAD_REQUEST, UNAVAILABLE, Operation, Param, RouteSpec
from ._routes import Response as RouteResponse
from ._sessions import SessionsApi
from ._sse import (
    EVENT_STREAM,
    HEARTBEAT,
    RunStreams,
    SseEvent,
    StreamEnded,
    StreamLive,
    StreamOnce,
    StreamOpened,
    sse_frame,
)
from ._submitted import RunAccepted, RunFinished, RunStreamed, RunSubmitted
from ._user_routes import USER_ROUTES
from ._users import acting_user, caller_user, check_user_id, easy_auth_enabled, principal_of

__all__ = [
    "AGENT_ROUTES",
    "BAD_REQUEST",
    "CORRELATION_HEADER",
    "EVENT_STREAM",
    "HEARTBEAT",
    "IDEMPOTENCY_HEADER",
    "INIT_INDEXING_SETTING",
    "MAX_BODY_BYTES",
    "SESSION_HEADER",
    "UNAVAILABLE",
    "USER_ROUTES",
    "Answers",
    "Api",
    "Cancelled",
    "Decided",
    "Operation",
    "Param",
    "Problem",
    "Request",
    "Response",
    "RouteResponse",
    "RouteSpec",
    "RunAccepted",
    "RunArgs",
    "RunFinished",
    "RunRequestBody",
    "RunResultBody",
    "RunStreamed",
    "RunStreams",
    "RunSubmitted",
    "SessionsApi",
    "SseEvent",
    "StreamEnded",
    "StreamLive",
    "StreamOnce",
    "StreamOpened",
    "UserErasure",
    "UserExport",
    "UserMemories",
    "WholeNumber",
    "acting_user",
    "approval_decision",
    "caller_user",
    "check_id",
    "check_init_indexing",
    "check_user_id",
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
    "refusal",
    "refused",
    "resume_after",
    "run_call",
    "serve",
    "sse_frame",
    "validation_problem",
    "wants_event_stream",
]
