"""The A2A routes, declared in the app's one route table (and so in the OpenAPI document) like
every other route."""

from __future__ import annotations

from ..http import Operation, RouteResponse, RouteSpec

GROUP = "a2a"

A2A_FORMAT = "a2a"
"""The webhook format of A2A pushes (hosting.webhooks): registered when the app is built, since a
delivery may run in a worker process, or an instance, that never served an A2A request."""

A2A_ROUTES = (
    RouteSpec(
        "a2a_card",
        "a2a/{agent}/.well-known/agent-card.json",
        (
            Operation(
                "GET",
                "A2A agent card: the agent's skills (its tools), capabilities, JSON-RPC endpoint and "
                "security schemes (docs/protocols.md).",
                (RouteResponse(200, "The agent card (A2A 1.0)."), RouteResponse(404, "Unknown agent.")),
            ),
        ),
        group=GROUP,
    ),
    RouteSpec(
        "a2a_rpc",
        "a2a/{agent}",
        (
            Operation(
                "POST",
                "A2A JSON-RPC (1.0 methods; 0.3 methods with the header `A2A-Version: 0.3`): "
                "SendMessage, SendStreamingMessage, GetTask, CancelTask, SubscribeToTask. Protocol "
                "errors are JSON-RPC errors in a 200 answer.",
                (
                    RouteResponse(
                        200,
                        "A JSON-RPC response; for SendStreamingMessage and SubscribeToTask an event "
                        "stream (`text/event-stream`) of JSON-RPC responses.",
                    ),
                    RouteResponse(404, "Unknown agent."),
                ),
            ),
        ),
        group=GROUP,
    ),
)
