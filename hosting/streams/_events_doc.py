"""What each SSE event carries, as JSON Schemas: the OpenAPI document's `x-events` of a
`text/event-stream` response (OpenAPI 3.1 has no way to describe SSE items; docs/streaming.md
says the same in prose)."""

from __future__ import annotations

from typing import Any

EVENT_STREAM = "text/event-stream"

_STRING = {"type": "string"}
_INT_OR_NULL = {"type": ["integer", "null"]}


def _object(
    description: str, properties: dict[str, Any], required: list[str] | None = None
) -> dict[str, Any]:
    return {
        "type": "object",
        "description": description,
        "properties": properties,
        "required": list(properties) if required is None else required,
    }


EVENT_SCHEMAS: dict[str, dict[str, Any]] = {
    "run.started": _object(
        "Always the first event of a run.",
        {"agent": _STRING, "session_id": _STRING, "correlation_id": _STRING},
    ),
    "run.restarted": _object(
        "The host died mid-turn and the turn resumed from its last finished step: `step` is the "
        "step done again (0: the turn's first model call), and the new attempt's events follow "
        "(the events of that step's interrupted attempt, after the previous step.started, are void).",
        {"reason": {"const": "redelivered"}, "after": {"type": "integer"}, "step": {"type": "integer"}},
        ["reason", "after"],
    ),
    "step.started": _object(
        "The turn's next step begins (1, 2, ...: each model call after the first, and each batch "
        "of tool calls); what the earlier steps streamed stands.",
        {"step": {"type": "integer"}},
    ),
    "text.delta": _object("The next piece of the answer text.", {"text": _STRING}),
    "reasoning.delta": _object(
        "The next piece of a reasoning summary (where the model sends one).", {"text": _STRING}
    ),
    "tool.call": _object(
        "A complete function call the model asked for; `arguments` is the JSON text it sent; "
        "`server` names the MCP server of a tool that is one's (docs/agents.md \"Tools of MCP servers\").",
        {"call_id": _STRING, "name": _STRING, "arguments": _STRING, "server": _STRING},
        ["call_id", "name", "arguments"],
    ),
    "tool.result": _object(
        "A tool's answer to a call; `is_error` is present (true) when the call failed.",
        {"call_id": _STRING, "result": {}, "is_error": {"type": "boolean"}},
        ["call_id", "result"],
    ),
    "usage": _object(
        "Token usage of one model call.",
        {"input_tokens": _INT_OR_NULL, "output_tokens": _INT_OR_NULL, "total_tokens": _INT_OR_NULL},
    ),
    "approval.required": _object(
        "The turn paused: the tool calls of its step `step` wait for a person's decision "
        "(`POST .../runs/{correlation_id}/approvals`); the stream stays open and goes on with "
        "`step.started` once they are all decided (docs/hosting.md \"Tool approvals\").",
        {
            "step": {"type": "integer"},
            "approvals": {
                "type": "array",
                "items": _object(
                    "One call waiting.",
                    {"call_id": _STRING, "name": _STRING, "arguments": {"type": "object"},
                     "requested_at": _STRING, "step": {"type": "integer"},
                     "decision": {"type": "null", "description": "null: it waits."}},
                ),
            },
        },
    ),
    "run.completed": {
        "description": "The last event of a successful run: the same body as the JSON answer "
        "(RunResultBody).",
        "$ref": "#/components/schemas/RunResultBody",
    },
    "run.failed": {
        "description": "The last event of a failed run: the problem document the JSON API answers "
        "with (same `code` and `status`).",
        "$ref": "#/components/schemas/Problem",
    },
    "run.cancelled": {
        "description": "The last event of a cancelled run: the problem document the JSON API "
        "answers with (409, `code` `run_cancelled`).",
        "$ref": "#/components/schemas/Problem",
    },
}
"""Every event type a run's stream carries, with its `data`."""


def event_stream_content() -> dict[str, Any]:
    """The OpenAPI media type object of a run's event stream."""
    return {
        # One event, as OpenAPI 3.2's `itemSchema` would give it, under an extension key: the
        # document is 3.1 (the version generated clients read: openapi-python-client refuses
        # 3.2), where `itemSchema` is not a media type field and fails validation. No `schema`:
        # in 3.1 that describes the whole body, and a generated client would try to parse the
        # event stream as that value (as a JSON object, it threw); without one it leaves the body
        # to the caller's SSE reader.
        "x-itemSchema": {
            "type": "object",
            "description": "One Server-Sent Event: `id:` (its sequence number), `event:` (its type, "
            "see x-events) and `data:` (one JSON object).",
            "properties": {
                "id": {"type": "string"},
                "event": {"type": "string"},
                "data": {"type": "string"},
            },
        },
        "x-events": EVENT_SCHEMAS,
    }
