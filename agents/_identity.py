"""A turn request's identity: the request entry it is stored as, and the hash (`requestHash`)
that tells a retry of the same run from another request under the same correlation id."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from state import AgentRequest, ChatMessage, TextContent, request_hash

from ._clock import now_iso
from ._structured import ResponseFormat
from ._turns import TurnRequest


def request_entry(request: TurnRequest, response_format: ResponseFormat | None) -> AgentRequest:
    created = now_iso()
    return AgentRequest(
        correlation_id=request.correlation_id,
        created_at=created,
        messages=[
            ChatMessage(
                role=m.role,
                contents=[TextContent(text=m.text)],
                author_name=m.author_name,
                created_at=created,
            )
            for m in request.messages
        ],
        response_type="json" if response_format is not None else "text",
        response_schema=response_format.schema if response_format is not None else None,
        orchestration_id=request.orchestration_id,
    )


def format_of(default: ResponseFormat | None, request: TurnRequest) -> ResponseFormat | None:
    """The response format `request` asks for, else the agent's `default`."""
    if request.response_format is None:
        return default
    try:
        return ResponseFormat.parse(request.response_format)
    except ValueError:
        return None  # a failure may be about this very format; the turn is recorded anyway


def request_identity(default_format: ResponseFormat | None, request: TurnRequest) -> str:
    """What ``request`` asks of an agent whose own format is ``default_format``, as the hash
    stored in the run's record (`requestHash`):
    its messages, the response format in effect and its options. A retry under the same
    correlation id must hash the same; anything else is another request."""
    entry = request_entry(request, format_of(default_format, request))
    return request_hash(entry.model_dump(mode="json", by_alias=True, exclude_none=True), request.options)


def same_request(
    default_format: ResponseFormat | None,
    request: TurnRequest,
    stored_hash: str | None,
    stored_request: Mapping[str, Any] | None,
) -> bool:
    """Whether a stored run (its `requestHash`, or its request entry when an older writer stored
    no hash) asked what ``request`` asks; False only when it provably asked something else."""
    if stored_hash is None:
        if stored_request is None:
            return True  # nothing stored to compare with
        stored_hash = request_hash(stored_request)
    return stored_hash == request_identity(default_format, request)
