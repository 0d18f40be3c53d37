"""The AG-UI route, declared in the app's one route table (and so in the OpenAPI document)."""

from __future__ import annotations

from ..http import Operation, RouteResponse, RouteSpec

AGUI_ROUTES = (
    RouteSpec(
        "agent_ag_ui",
        "agents/{agent}/ag-ui",
        (
            Operation(
                "POST",
                "AG-UI 1.0: run one turn of the agent from a `RunAgentInput` (`threadId` is the session, "
                "`runId` the run), answered as the AG-UI event stream; the same run sent again follows it "
                "(with `Last-Event-ID`, after that event); `resume` answers approval interrupts "
                "(docs/protocols.md \"AG-UI\").",
                (
                    RouteResponse(200, "The AG-UI event stream (`text/event-stream`)."),
                    RouteResponse(
                        400, "A malformed RunAgentInput or a field the agent cannot honour (`field`)."
                    ),
                    RouteResponse(404, "Unknown agent, or another user's thread."),
                    RouteResponse(409, "The run id names another request, or the session is busy."),
                ),
            ),
        ),
        group="ag-ui",
    ),
)
