"""The user routes: a user's long-term memory (`GET .../memories`, `DELETE .../memories/{id}`)
and the export of everything kept for them (`GET .../export`, hosting.http._export), under
`users/{user_id}/` for a caller with a function key and `me/` for the user the caller acts for
(hosting.http._users: `named_user`, `own_user`).

The memory is the app's store (`agents.memory.memory_store_from_env`, the one `UserMemoryProvider`
uses unless it is given another). Items are listed across the user's namespaces: the memory
shared by their agents and each agent's own. An item of another user answers exactly as an id
never used (404 `memory_not_found`): the lookup is scoped to the user, so it cannot tell them apart.
"""

from __future__ import annotations

from urllib.parse import urlencode

import azure.functions as func

from agents import AgentConfigurationError
from agents.memory import (
    MAX_LIST_LIMIT,
    MAX_QUERY_CHARS,
    InvalidMemory,
    MemoryCursor,
    MemoryItem,
    MemoryStore,
    memory_store_from_env,
)

from .._errors import ProblemCode, ProblemError
from .._ids import id_problem
from .._settings import ApiSettings
from ._models import MemoriesPageBody, MemoryBody
from ._problems import json_response
from ._requests import page_size_param
from ._users import USER_ID, named_user, own_user

DEFAULT_LIMIT = 20
MEMORY_ID = "memory_id"
"""The path parameter naming one item."""


def route_user(req: func.HttpRequest) -> str:
    """The user a user route serves: the one its path names (`users/{user_id}/...`), else the
    one the caller acts for (`me/...`)."""
    return named_user(req) if USER_ID in req.route_params else own_user(req)


def memory_body(item: MemoryItem) -> MemoryBody:
    """An item as the routes show it: everything but its embedding."""
    return MemoryBody(
        id=item.id,
        text=item.text,
        agent=item.namespace.agent,
        metadata=dict(item.metadata),
        source_session=item.source_session,
        created_at=item.created_at,
        updated_at=item.updated_at,
    )


def _cursor(req: func.HttpRequest) -> MemoryCursor | None:
    raw = req.params.get("cursor")
    if raw is None:
        return None
    try:
        return MemoryCursor.parse(raw)
    except InvalidMemory:
        raise ProblemError(
            ProblemCode.INVALID_FIELD,
            "'cursor' must be the 'cursor' of a previous page of this listing",
            field="cursor",
        ) from None


def _query(req: func.HttpRequest) -> str:
    raw = req.params.get("q", "")
    if len(raw) > MAX_QUERY_CHARS:
        raise ProblemError(
            ProblemCode.INVALID_FIELD,
            f"'q' must be at most {MAX_QUERY_CHARS} characters (got {len(raw)})",
            field="q",
        )
    return raw


def _memory_id(req: func.HttpRequest) -> str:
    value = req.route_params.get(MEMORY_ID, "")
    problem = id_problem(value)
    if problem is not None:
        raise ProblemError(ProblemCode.INVALID_FIELD, f"'{MEMORY_ID}' {problem}", field=MEMORY_ID)
    return value


class UserMemories:
    """The handlers of the memory routes. `store`: the memory store (default: the app's, opened
    on first use, so an app whose agents keep no long-term memory opens none until asked)."""

    def __init__(self, settings: ApiSettings, store: MemoryStore | None = None) -> None:
        self.settings = settings
        self._store = store

    def store(self) -> MemoryStore:
        """The memory store; 503 `storage_unavailable` when the app's settings name none usable."""
        if self._store is None:
            try:
                self._store = memory_store_from_env()
            except AgentConfigurationError as error:
                raise ProblemError(ProblemCode.STORAGE_UNAVAILABLE, str(error)) from None
        return self._store

    async def list(self, req: func.HttpRequest, client: object) -> func.HttpResponse:
        """GET users/{user_id}/memories, me/memories: ?limit=&cursor=&q="""
        user = route_user(req)
        limit = page_size_param(req, "limit", default=DEFAULT_LIMIT, maximum=MAX_LIST_LIMIT)
        after, query = _cursor(req), _query(req)
        page = await self.store().list_user(user, query, limit=limit, after=after)
        cursor = None if page.next is None else str(page.next)
        next_url = None
        if cursor is not None:
            params = {"limit": str(limit), "cursor": cursor, **({"q": query} if query else {})}
            if USER_ID in req.route_params:
                path = f"users/{user}/memories"
            else:
                path = "me/memories"
                if req.params.get(USER_ID) is not None:
                    params[USER_ID] = user
            next_url = self.settings.url(f"{path}?{urlencode(params)}")
        body = MemoriesPageBody(
            user_id=user, items=[memory_body(i) for i in page.items], cursor=cursor, next=next_url
        )
        return json_response(body)

    async def delete(self, req: func.HttpRequest, client: object) -> func.HttpResponse:
        """DELETE users/{user_id}/memories/{memory_id}, me/memories/{memory_id}: 204, or 404
        `memory_not_found` (also for another user's item)."""
        user = route_user(req)
        memory_id = _memory_id(req)
        store = self.store()
        item = await store.find(user, memory_id)
        if item is None or not await store.delete(item.namespace, item.id):
            raise ProblemError(
                ProblemCode.MEMORY_NOT_FOUND, f"there is no memory {memory_id!r}", field=MEMORY_ID
            )
        return func.HttpResponse(status_code=204)
