"""The Responses API's routes, declared in the app's one route table (and so in the OpenAPI
document) like every other route."""

from __future__ import annotations

from ..http import Operation, RouteResponse, RouteSpec
from ._errors import ResponsesErrorBody

_NOT_FOUND = RouteResponse(
    404, "Unknown agent (`model`) or response; another user's response is unknown too.", ResponsesErrorBody
)
_BAD = RouteResponse(
    400, "A field the agent cannot honour, or a malformed one (`param` names it).", ResponsesErrorBody
)
_CONFLICT = RouteResponse(409, "The run finished otherwise (or the session is busy).", ResponsesErrorBody)
GROUP = "responses"

RESPONSES_ROUTES = (
    RouteSpec(
        "responses_create",
        "v1/responses",
        (
            Operation(
                "POST",
                "OpenAI Responses API: run one turn of the agent `model` names (docs/protocols.md). "
                "`stream: true` answers the Responses event stream; `background: true` answers at once.",
                (
                    RouteResponse(
                        200,
                        "The response (an OpenAI `Response` object); with `stream: true`, the Responses "
                        "event stream (`text/event-stream`).",
                    ),
                    _BAD,
                    _NOT_FOUND,
                    _CONFLICT,
                ),
            ),
        ),
        group=GROUP,
    ),
    RouteSpec(
        "responses_get",
        "v1/responses/{response_id}",
        (
            Operation(
                "GET",
                "A response (a run): its status and output.",
                (RouteResponse(200, "The response."), _NOT_FOUND),
            ),
        ),
        group=GROUP,
    ),
    RouteSpec(
        "responses_cancel",
        "v1/responses/{response_id}/cancel",
        (
            Operation(
                "POST",
                "Cancel a response (the run): a queued run never starts, a running one stops at its next "
                "step.",
                (RouteResponse(200, "The response, cancelled."), _CONFLICT, _NOT_FOUND),
            ),
        ),
        group=GROUP,
    ),
    RouteSpec(
        "responses_input_items",
        "v1/responses/{response_id}/input_items",
        (
            Operation(
                "GET",
                "The input items a response was created with.",
                (RouteResponse(200, "A list of items."), _NOT_FOUND),
            ),
        ),
        group=GROUP,
    ),
)
