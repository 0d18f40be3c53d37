"""Listing an agent's sessions, a page at a time, from the Durable extension's entity query
(hosting.client._query, with the states). The token is handed to callers base64url-wrapped, so
whatever the backend's token looks like (JSON from Azure Storage, text from the Durable Task Scheduler) it
travels in a query string and comes back as a header value it cannot break.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

import azure.functions as func

from agents import Agent
from state import compact_json

from .._errors import ProblemCode, ProblemError
from .._ids import entity_name
from .._settings import ApiSettings
from ..client import ContinuationRefused, DurableClient, NoQueryEndpoint, entity_key, query_entities
from ..stored import INTERNAL, StoredDocument, Viewer, first_text
from ._lookup import hosted_agent
from ._models import SessionsPageBody, SessionSummary
from ._problems import json_response
from ._requests import page_size_param
from ._users import USER_ID, caller_user

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
_MAX_TOKEN_CHARS = 4096


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


def _preview(entry: Mapping[str, Any]) -> str | None:
    return _shortened(first_text(entry))


def _shortened(found: str | None) -> str | None:
    if found is None:
        return None
    text = " ".join(found.split())
    return text[:117] + "…" if len(text) > 120 else text


def summarize(key: str, last_operation_time: str | None, state: Any) -> SessionSummary:
    """One row of the list from an entity's query result (its state may be unreadable)."""
    document = StoredDocument.parse(state)
    if document is not None:
        size = document.size_bytes()  # as GET .../sessions/{id} and the size limit count it
    elif state is None:
        size = 0
    else:  # unreadable: its text as the query returned it (the extension's serialisation), or as
        # the state package would write it
        size = len((state if isinstance(state, str) else compact_json(state)).encode("utf-8"))
    requests = document.requests() if document is not None else []
    waiting = document.waiting_runs() if document is not None else []
    first = _preview(requests[0]) if requests else _shortened(waiting[0].text) if waiting else None
    return SessionSummary(
        session_id=key,
        last_operation_time=last_operation_time,
        schema_version=document.schema_version if document is not None else None,
        turns=len(requests),
        in_progress=len(waiting),
        size_bytes=size,
        first_message=first,
        readable=document is not None,
        user_id=document.owner if document is not None else None,
    )


async def query_sessions(
    client: DurableClient, agent: str, *, top: int, continuation: str | None, user: Viewer = INTERNAL
) -> tuple[list[SessionSummary], str | None]:
    """One page of `agent`'s sessions that `user` may see, and the backend's token of the next
    page (the backend pages before the filter, so a page may hold fewer than `top`)."""
    items, next_token = await query_entities(
        client, entity_name(agent), top=top, continuation=continuation, fetch_state=True
    )
    sessions = []
    for item in items:
        key = entity_key(item)
        document = StoredDocument.parse(item.get("state"))
        if document is not None and (document.is_tombstone or not document.visible_to(user)):
            continue  # deleted, or another user's
        if key is not None:
            sessions.append(summarize(key, item.get("lastOperationTime"), item.get("state")))
    return sessions, next_token


class SessionsApi:
    """The handler of `GET agents/{agent}/sessions`."""

    def __init__(self, agents: Mapping[str, Agent], settings: ApiSettings) -> None:
        self.agents = agents
        self.settings = settings

    async def list(self, req: func.HttpRequest, client: DurableClient) -> func.HttpResponse:
        """GET agents/{agent}/sessions?page_size=N&continuation=T"""
        agent = hosted_agent(self.agents, req)
        top = page_size_param(req, "page_size", default=DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE)
        backend_token = decode_token(req.params.get("continuation"))
        user = caller_user(req)
        try:
            found = await query_sessions(client, agent.name, top=top, continuation=backend_token, user=user)
        except NoQueryEndpoint as error:
            raise ProblemError(ProblemCode.STORAGE_UNAVAILABLE, str(error)) from None
        except ContinuationRefused as error:
            raise ProblemError(ProblemCode.INVALID_FIELD, str(error), field="continuation") from None
        sessions, next_token = found
        continuation = encode_token(next_token)
        next_url = None
        if continuation is not None:
            query = f"page_size={top}&continuation={continuation}"
            if req.params.get(USER_ID) is not None and user is not None:
                query += f"&{USER_ID}={user}"  # the id rule keeps it URL-safe
            next_url = self.settings.url(f"agents/{agent.name}/sessions?{query}")
        body = SessionsPageBody(agent=agent.name, sessions=sessions, continuation=continuation, next=next_url)
        return json_response(body)
