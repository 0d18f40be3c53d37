"""Listing an agent's sessions, a page at a time, from the Durable extension's entity query
(hosting._entity_query, with the states). The token is handed to callers base64url-wrapped, so
whatever the backend's token looks like (JSON from Azure Storage, text from the Durable Task Scheduler) it
travels in a query string and comes back as a header value it cannot break.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

import azure.functions as func

from agents import Agent

from .._errors import ProblemCode, ProblemError
from .._ids import entity_name
from .._settings import ApiSettings
from ..client._query import entity_key, query_entities
from ..stored._deleted import is_tombstone
from ._lookup import hosted_agent
from ._models import SessionsPageBody, SessionSummary
from ._problems import json_response

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
_MAX_TOKEN_CHARS = 4096


def page_size(req: func.HttpRequest) -> int:
    """The `page_size` query parameter (1-100, default 20), or a 400 naming it."""
    raw = req.params.get("page_size")
    if raw is None:
        return DEFAULT_PAGE_SIZE
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_PAGE_SIZE:
        raise ProblemError(
            ProblemCode.INVALID_FIELD,
            f"'page_size' must be a whole number from 1 to {MAX_PAGE_SIZE}",
            field="page_size",
        )
    return int(raw)


def decode_token(token: str | None) -> str | None:
    """The backend's continuation token inside a `continuation` parameter we handed out."""
    if not token:
        return None
    problem = ProblemError(
        ProblemCode.INVALID_FIELD,
        "'continuation' is not a token this API handed out (pass the `continuation` of the previous page)",
        field="continuation",
    )
    if len(token) > _MAX_TOKEN_CHARS:
        raise problem
    try:
        text = base64.urlsafe_b64decode(token.encode("ascii") + b"=" * (-len(token) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError):
        raise problem from None
    # A header value must stay one printable line: nothing a caller sends can add a header.
    if not text or not text.isprintable():
        raise problem
    return text


def encode_token(token: str | None) -> str | None:
    """The `continuation` handed to callers for a backend token (None: no more pages)."""
    if not token:
        return None
    return base64.urlsafe_b64encode(token.encode("utf-8")).decode("ascii").rstrip("=")


def _document(state: Any) -> dict[str, Any] | None:
    if isinstance(state, str | bytes):
        try:
            state = json.loads(state)
        except ValueError:
            return None
    return state if isinstance(state, dict) else None


def _preview(entry: dict[str, Any]) -> str | None:
    for message in entry.get("messages") or []:
        for content in (message or {}).get("contents") or []:
            if isinstance(content, dict) and content.get("$type") == "text":
                text = " ".join(str(content.get("text", "")).split())
                return text[:117] + "…" if len(text) > 120 else text
    return None


def summarize(key: str, last_operation_time: str | None, state: Any) -> SessionSummary:
    """One row of the list from an entity's query result (its state may be unreadable)."""
    raw = state if isinstance(state, str) else json.dumps(state, ensure_ascii=False)
    document = _document(state)
    data = (document or {}).get("data")
    history = data.get("conversationHistory") if isinstance(data, dict) else None
    entries = [e for e in history if isinstance(e, dict)] if isinstance(history, list) else []
    requests = [e for e in entries if e.get("$type") == "request"]
    return SessionSummary(
        session_id=key,
        last_operation_time=last_operation_time,
        schema_version=(document or {}).get("schemaVersion") if document else None,
        turns=len(requests),
        size_bytes=len(raw.encode("utf-8")) if state is not None else 0,
        first_message=_preview(requests[0]) if requests else None,
        readable=document is not None,
    )


async def query_sessions(
    client: Any, agent: str, *, top: int, continuation: str | None
) -> tuple[list[SessionSummary], str | None]:
    """One page of `agent`'s sessions and the backend's token of the next page."""
    items, next_token = await query_entities(
        client, entity_name(agent), top=top, continuation=continuation, fetch_state=True
    )
    sessions = []
    for item in items:
        key = entity_key(item)
        if key is not None and not is_tombstone(_document(item.get("state"))):  # deleted
            sessions.append(summarize(key, item.get("lastOperationTime"), item.get("state")))
    return sessions, next_token


class SessionsApi:
    """The handler of `GET agents/{agent}/sessions`."""

    def __init__(self, agents: Mapping[str, Agent], settings: ApiSettings) -> None:
        self.agents = agents
        self.settings = settings

    async def list(self, req: func.HttpRequest, client: Any) -> func.HttpResponse:
        """GET agents/{agent}/sessions?page_size=N&continuation=T"""
        agent = hosted_agent(self.agents, req)
        top = page_size(req)
        backend_token = decode_token(req.params.get("continuation"))
        sessions, next_token = await query_sessions(client, agent.name, top=top, continuation=backend_token)
        continuation = encode_token(next_token)
        next_url = None
        if continuation is not None:
            query = f"page_size={top}&continuation={continuation}"
            next_url = self.settings.url(f"agents/{agent.name}/sessions?{query}")
        body = SessionsPageBody(agent=agent.name, sessions=sessions, continuation=continuation, next=next_url)
        return json_response(body)
