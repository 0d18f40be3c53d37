"""The HTTP edge: the streaming-types adapter, routes and their models, the OpenAPI document,
problems, the agent routes' handlers, the answers they render runs with, and SSE."""

from ._answers import Answers
from ._api import Api, describe_agent, guarded
from ._edge import INIT_INDEXING_SETTING, Request, Response, check_init_indexing, serve
from ._lookup import hosted_agent
from ._openapi import openapi_document
from ._problems import json_response, problem_response
from ._refusals import refusal
from ._requests import CORRELATION_HEADER, SESSION_HEADER, derived_request
from ._routes import Operation, RouteSpec
from ._routes import Response as RouteResponse
from ._sse import (
    EVENT_STREAM,
    RunStreams,
    SseEvent,
    read_sse_events,
    resume_after,
    sse_frame,
    wants_event_stream,
)
from ._users import caller_user, easy_auth_enabled

__all__ = [
    "CORRELATION_HEADER",
    "EVENT_STREAM",
    "INIT_INDEXING_SETTING",
    "SESSION_HEADER",
    "Answers",
    "Api",
    "Operation",
    "Request",
    "Response",
    "RouteResponse",
    "RouteSpec",
    "RunStreams",
    "SseEvent",
    "caller_user",
    "check_init_indexing",
    "derived_request",
    "describe_agent",
    "easy_auth_enabled",
    "guarded",
    "hosted_agent",
    "json_response",
    "openapi_document",
    "problem_response",
    "read_sse_events",
    "refusal",
    "resume_after",
    "serve",
    "sse_frame",
    "wants_event_stream",
]
