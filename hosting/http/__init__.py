"""The HTTP edge: the streaming-types adapter, routes and their models, the OpenAPI document,
problems, the agent routes' handlers, the answers they render runs with, and SSE."""

from ._answers import Answers
from ._api import Api, describe_agent, guarded
from ._edge import INIT_INDEXING_SETTING, Request, Response, check_init_indexing, serve
from ._openapi import openapi_document
from ._problems import json_response, problem_response
from ._refusals import refusal
from ._requests import CORRELATION_HEADER, SESSION_HEADER
from ._routes import Operation, RouteSpec
from ._routes import Response as RouteResponse
from ._sse import EVENT_STREAM, RunStreams, resume_after, sse_frame, wants_event_stream
from ._users import caller_user, claimed_user

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
    "caller_user",
    "check_init_indexing",
    "claimed_user",
    "describe_agent",
    "guarded",
    "json_response",
    "openapi_document",
    "problem_response",
    "refusal",
    "resume_after",
    "serve",
    "sse_frame",
    "wants_event_stream",
]
