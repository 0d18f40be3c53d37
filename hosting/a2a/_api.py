"""The A2A routes' handlers: the agent card, and the JSON-RPC endpoint, answered by the SDK's own
JSON-RPC dispatcher (1.0 methods, and 0.3 methods for a client that asks for 0.3 with the
`A2A-Version` header, as the SDK's server does) over this edge's request handler."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import azure.functions as func
from a2a.server.context import ServerCallContext
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from google.protobuf.json_format import MessageToDict
from starlette.requests import Request as StarletteRequest
from starlette.responses import Response as StarletteResponse
from starlette.responses import StreamingResponse

from .._errors import ProblemCode, ProblemError
from ..client import DurableClient
from ..http import EVENT_STREAM, Api, easy_auth_enabled, problem_response
from ._card import agent_card
from ._handler import AGENT_KEY, CLIENT_KEY, HTTP_KEY, A2aHandler
from ._push import push_enabled, push_renderer

Answer = func.HttpResponse | StarletteResponse


class _ContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context, with this call's HTTP request, durable client and agent."""

    def build(self, request: StarletteRequest) -> ServerCallContext:
        context = super().build(request)
        for key in (HTTP_KEY, CLIENT_KEY, AGENT_KEY):
            context.state[key] = request.scope[key]
        return context


def _starlette(req: func.HttpRequest, client: DurableClient, agent: str) -> StarletteRequest:
    """The request as the SDK's dispatcher reads it (its headers and body; this call's parts
    ride in its scope)."""
    body = req.get_body()
    headers = [(k.lower().encode("latin-1"), v.encode("latin-1", "replace")) for k, v in req.headers.items()]
    scope: dict[str, Any] = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "headers": headers,
        "query_string": b"",
        HTTP_KEY: req,
        CLIENT_KEY: client,
        AGENT_KEY: agent,
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    return StarletteRequest(scope, receive)


def _sse(answer: Any) -> StreamingResponse:
    """The dispatcher's event stream (sse-starlette's, which runs its own task group) as the plain
    streaming response the Functions HTTP streams carry."""

    async def frames() -> AsyncIterator[bytes]:
        async for item in answer.body_iterator:
            if isinstance(item, dict):
                lines = [f"event: {item['event']}"] if item.get("event") else []
                lines += [f"data: {line}" for line in str(item.get("data", "")).splitlines()]
                yield ("\n".join(lines) + "\n\n").encode()
            else:
                yield item if isinstance(item, bytes) else str(item).encode()

    return StreamingResponse(
        frames(), media_type=EVENT_STREAM, headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    )


class A2aApi:
    """The A2A routes, bound to the product's API (its agents, settings and streams)."""

    def __init__(self, api: Api) -> None:
        self.api = api
        handler = A2aHandler(api)
        self.dispatcher = JsonRpcDispatcher(handler, _ContextBuilder(), enable_v0_3_compat=True)
        self.render_push = push_renderer(handler.ended_task)
        """The `a2a` webhook format's renderer (build_app registers it)."""

    def _unknown(self, name: str) -> func.HttpResponse:
        hosted = ", ".join(sorted(self.api.agents))
        return problem_response(
            ProblemError(ProblemCode.UNKNOWN_AGENT, f"there is no agent {name!r}; hosted agents: {hosted}")
        )

    async def card(self, req: func.HttpRequest, client: Any) -> Answer:
        """GET a2a/{agent}/.well-known/agent-card.json"""
        name = req.route_params.get("agent", "")
        agent = self.api.agents.get(name)
        if agent is None:
            return self._unknown(name)
        auth = easy_auth_enabled()
        card = agent_card(agent, req.url, dict(req.headers), easy_auth=auth, push=push_enabled())
        return func.HttpResponse(
            json.dumps(MessageToDict(card)),
            mimetype="application/json",
            headers={"Cache-Control": "no-cache"},
        )

    async def rpc(self, req: func.HttpRequest, client: DurableClient) -> Answer:
        """POST a2a/{agent}: one JSON-RPC call."""
        name = req.route_params.get("agent", "")
        if name not in self.api.agents:
            return self._unknown(name)
        answer = await self.dispatcher.handle_requests(_starlette(req, client, name))
        if isinstance(answer, StreamingResponse) or hasattr(answer, "body_iterator"):
            return _sse(answer)
        return func.HttpResponse(
            bytes(answer.body), status_code=answer.status_code, mimetype="application/json"
        )
