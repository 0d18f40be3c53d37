"""The route table of the user routes (hosting.http._memories, hosting.http._export,
hosting.http._erasure): a user's long-term memory, the export of everything kept for them and its
erasure, under `users/{user_id}/` and, for the user the caller acts for, `me/`."""

from __future__ import annotations

from agents.memory import MAX_LIST_LIMIT, MAX_QUERY_CHARS, MEMORY_CURSOR_PATTERN

from .._ids import ID_PATTERN_TEXT
from ._models import ErasureBody, MemoriesPageBody
from ._routes import BAD_REQUEST, UNAVAILABLE, Operation, Param, Response, RouteSpec

_FORBIDDEN = Response(
    403,
    "`user_mismatch`: behind App Service Authentication, the path or `user_id` named another user "
    "than the signed-in one.",
)
_NOT_SIGNED_IN = Response(
    401, "`not_signed_in`: behind App Service Authentication, no one is signed in (`me/` routes)."
)
_USER = Param(
    "user_id",
    "On `me/` routes without App Service Authentication: the user a caller with a function key acts "
    "for (required there). Elsewhere it may only repeat the user the route serves.",
    {"type": "string", "pattern": ID_PATTERN_TEXT},
)
_LIST = Operation(
    "GET",
    "A user's long-term memory, newest created first, a page at a time; across the memory shared "
    "by their agents and each agent's own (`agent`).",
    (Response(200, "One page and the cursor of the next.", MemoriesPageBody), BAD_REQUEST, _FORBIDDEN,
     UNAVAILABLE),
    query=(
        Param("limit", f"Items per page, 1-{MAX_LIST_LIMIT} (default 20).",
              {"type": "integer", "minimum": 1, "maximum": MAX_LIST_LIMIT}),
        Param("cursor", "The `cursor` of the previous page.",
              {"type": "string", "pattern": MEMORY_CURSOR_PATTERN}),
        Param("q", "Only the items holding one of these words (case-folded, any script).",
              {"type": "string", "maxLength": MAX_QUERY_CHARS}),
        _USER,
    ),
)
_DELETE = Operation(
    "DELETE",
    "Forget one item of a user's long-term memory.",
    (
        Response(204, "Forgotten.", empty=True),
        BAD_REQUEST,
        _FORBIDDEN,
        Response(404, "`memory_not_found`: no such item of this user's (nor of another user's)."),
        UNAVAILABLE,
    ),
    query=(_USER,),
)
_EXPORT = Operation(
    "GET",
    "Everything kept for a user, streamed as NDJSON: their memory, every session they own with its "
    "archived history, then an `end` line (docs/hosting.md \"Users' memory and export\").",
    (
        Response(
            200,
            "One JSON object a line, each with its `kind`: `user`, `memory`, `session`, "
            "`archived_entry`, `error`, `end` (last; missing when the answer was cut off).",
            lines="NDJSON: one JSON object per line, each with a `kind`.",
        ),
        BAD_REQUEST,
        _FORBIDDEN,
        UNAVAILABLE,
    ),
    query=(_USER,),
)
_ERASE = Operation(
    "DELETE",
    "Erase everything kept for a user, durably: every session they own in every agent (with its "
    "archived history and stream events), then their long-term memory (docs/hosting.md "
    "\"Erasing a user\"). A request while an erasure of the user is under way attaches to it.",
    (
        Response(
            202,
            "Started (or under way): the receipt so far; `Location` is the receipt's URL to poll.",
            ErasureBody,
        ),
        BAD_REQUEST,
        _FORBIDDEN,
        UNAVAILABLE,
    ),
    query=(_USER,),
)
_ERASURE = Operation(
    "GET",
    "The receipt of a user's erasure: its status, when it started and finished, and what it "
    "erased (memory items, sessions per agent, archived chunks, stream events).",
    (
        Response(200, "The receipt (`status`: `running`, `completed` or `failed`).", ErasureBody),
        BAD_REQUEST,
        _FORBIDDEN,
        Response(404, "`erasure_not_found`: no erasure of this user was asked for."),
        UNAVAILABLE,
    ),
    query=(_USER,),
)


def _routes(prefix: str, function: str, me: bool) -> tuple[RouteSpec, ...]:
    extra = (_NOT_SIGNED_IN,) if me else ()

    def op(base: Operation) -> Operation:
        if not extra:
            return base
        responses = tuple(r for r in base.responses if r.status < 401) + extra + tuple(
            r for r in base.responses if r.status > 401
        )
        return Operation(base.method, base.summary, responses, query=base.query)

    return (
        RouteSpec(f"{function}_memories", f"{prefix}/memories", (op(_LIST),), group="users"),
        RouteSpec(f"{function}_memory", f"{prefix}/memories/{{memory_id}}", (op(_DELETE),), group="users"),
        RouteSpec(f"{function}_export", f"{prefix}/export", (op(_EXPORT),), group="users"),
        RouteSpec(f"{function}_erase", prefix, (op(_ERASE),), group="users"),
        RouteSpec(f"{function}_erasure", f"{prefix}/erasure", (op(_ERASURE),), group="users"),
    )


USER_ROUTES: tuple[RouteSpec, ...] = (
    *_routes("users/{user_id}", "user", me=False),
    *_routes("me", "my", me=True),
)
"""The memory, export and erasure routes, for a named user and for the caller's own."""
