"""The long-history side of the session API: counts and expiry on `GET .../sessions/{id}`,
`GET .../sessions/{id}/history` (pages, newest first), runs whose entries were archived, and
the 409 `history_unavailable` problem."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import azure.functions as func

from agents import Agent
from state import HistoryUnavailable

from .._errors import ProblemCode, ProblemError
from .._ids import entity_name
from .._settings import ApiSettings
from ..archive import Cursor, HistoryArchive, default_archive, history_page
from ..client import DurableClient, state_problem
from ..lifecycle import expires_at, ttl_for
from ..stored import StoredDocument
from ._lookup import existing_session
from ._models import HistoryPageBody, SessionBody
from ._problems import json_response
from ._refusals import history_unavailable, unreadable
from ._requests import page_size_param

DEFAULT_PAGE = 100
MAX_PAGE = 1000


def with_history(body: SessionBody, settings: ApiSettings, document: Mapping[str, Any]) -> SessionBody:
    """The session body plus its entry counts, history URL and expiry."""
    total, archived = StoredDocument(document).counts()
    path = f"agents/{body.agent}/sessions/{body.session_id}/history"
    return body.model_copy(
        update={
            "entries": total,
            "archived_entries": archived,
            "history_url": settings.url(path),
            "expires_at": expires_at(document, ttl_for(body.agent)),
        }
    )


def _cursor(req: func.HttpRequest) -> Cursor | None:
    raw = req.params.get("before")
    if raw is None:
        return None
    cursor = Cursor.parse(raw) if len(raw) <= 96 else None
    if cursor is None:
        raise ProblemError(
            ProblemCode.INVALID_FIELD,
            "'before' must be a cursor from a previous page's 'next' (or an entry index)",
            field="before",
        )
    return cursor


async def history(
    agents: Mapping[str, Agent],
    req: func.HttpRequest,
    client: DurableClient,
    archive: HistoryArchive | None = None,
) -> func.HttpResponse:
    """GET agents/{agent}/sessions/{session_id}/history?before=&limit="""
    limit = page_size_param(req, "limit", default=DEFAULT_PAGE, maximum=MAX_PAGE)
    cursor = _cursor(req)
    agent, session_id, _entity_id, snapshot = await existing_session(agents, req, client)
    reason = state_problem(snapshot.document)
    if reason is not None:
        raise unreadable(agent.name, session_id, reason)
    try:
        page = await history_page(
            archive or default_archive(),
            entity_name(agent.name),
            session_id,
            snapshot.stored,
            cursor,
            limit,
        )
    except HistoryUnavailable as error:
        raise history_unavailable(error, agent.name, session_id) from None
    body = HistoryPageBody(
        agent=agent.name,
        session_id=session_id,
        total=page.total,
        entries=[dict(e) for e in page.entries],
        next=None if page.next is None else str(page.next),
    )
    return json_response(body)
