"""The route table: every HTTP function the app registers, with what the OpenAPI document says.

The functions and the OpenAPI document are both generated from this one table, so they cannot
drift apart (a test compares the document with `app.get_functions()` anyway).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic import BaseModel

from .._ids import ID_PATTERN_TEXT, IDEMPOTENCY_KEY_PATTERN_TEXT, MULTITASK_STRATEGIES
from .._settings import MAX_BODY_BYTES
from ..archive import CURSOR_PATTERN
from ._models import (
    AgentsBody,
    ApprovalDecisionBody,
    ApprovalDecisionRequest,
    HealthBody,
    HistoryPageBody,
    RunActionBody,
    RunRequestBody,
    RunResultBody,
    SessionActionBody,
    SessionBody,
    SessionsPageBody,
)


@dataclass(frozen=True)
class Param:
    """A query parameter or header of an operation."""

    name: str
    description: str
    schema: dict[str, object] = field(default_factory=lambda: {"type": "string"})


@dataclass(frozen=True)
class Response:
    """One documented response; `model` None with a 4xx/5xx status means a problem document."""

    status: int
    description: str
    model: type[BaseModel] | None = None
    events: bool = False
    """Also (or only, without `model`) answered as `text/event-stream` (docs/streaming.md)."""
    empty: bool = False
    """Answered with no body (204)."""
    lines: str | None = None
    """Answered as NDJSON (`application/x-ndjson`): what each line is (hosting.http._export)."""


@dataclass(frozen=True)
class Operation:
    """One method of a route."""

    method: str
    summary: str
    responses: tuple[Response, ...]
    request: type[BaseModel] | None = None
    text_body: bool = False
    query: tuple[Param, ...] = ()
    headers: tuple[Param, ...] = ()


@dataclass(frozen=True)
class RouteSpec:
    """One HTTP function: its name, route (without the `/api` prefix) and operations."""

    function: str
    route: str
    operations: tuple[Operation, ...]
    anonymous: bool = False
    needs_client: bool = True
    group: str = "agents"

    @property
    def methods(self) -> list[str]:
        """The HTTP methods of the function."""
        return [op.method for op in self.operations]

    @property
    def path_params(self) -> list[str]:
        """Names of the route's `{parameters}`."""
        return re.findall(r"{(\w+)}", self.route)


BAD_REQUEST = Response(400, "Invalid request; the problem's `field` names what to fix.")
"""The 400 every operation documents."""
UNAVAILABLE = Response(503, "The durable backend is unreachable.")
"""The 503 of an operation that calls the durable backend."""

_BAD = BAD_REQUEST
_UNKNOWN = Response(404, "Unknown agent or session.")
_UNREADABLE = Response(409, "The session's stored state cannot be read by this build (left unchanged).")
_DOWN = UNAVAILABLE
_FORBIDDEN = Response(
    403,
    "`user_mismatch`: behind App Service Authentication, `user_id` named another user than the "
    "signed-in one.",
)
_USER = Param(
    "user_id",
    "The user the caller acts for (a caller with a function key acting for its user; behind App Service "
    "Authentication the signed-in user, which this may only repeat). Another user's session is 404.",
    {"type": "string", "pattern": ID_PATTERN_TEXT},
)
_DISCARDED = Response(
    410,
    "A reset or delete discarded the run (`run_discarded`): a retry of it is answered so, never run "
    "again.",
)

_ID_SCHEMA: dict[str, object] = {"type": "string", "pattern": ID_PATTERN_TEXT}
_KEY_SCHEMA: dict[str, object] = {"type": "string", "pattern": IDEMPOTENCY_KEY_PATTERN_TEXT}
_EVENT_ID_SCHEMA: dict[str, object] = {"type": "string", "pattern": "^[0-9]{1,16}$"}
# An empty Last-Event-ID means "from the start": an EventSource sends one after an event without an id.
_LAST_EVENT_ID_SCHEMA: dict[str, object] = {"type": "string", "pattern": "^([0-9]{1,16})?$"}

AGENT_ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec(
        "agent_run",
        "agents/{agent}/run",
        (
            Operation(
                "POST",
                "Send a message to an agent (one turn); waits for the answer by default.",
                (
                    Response(
                        200,
                        "The turn finished; the agent's answer. With `Accept: text/event-stream`: the "
                        "run's events as they happen (docs/streaming.md), ending in `run.completed` or "
                        "`run.failed`.",
                        RunResultBody,
                        events=True,
                    ),
                    Response(
                        202,
                        "Accepted; poll the `Location` (not waiting, or the wait ran out), or "
                        "`awaiting_approval`: tool calls (`approvals`) wait for a decision "
                        "(`POST .../runs/{correlation_id}/approvals`).",
                        RunResultBody,
                    ),
                    _BAD,
                    _FORBIDDEN,
                    _UNKNOWN,
                    Response(
                        409,
                        "Idempotency conflict (a stored or pending run with this id asked something "
                        "else), the session's stored state is unreadable, or the session "
                        "is full (`session_too_large`: the turn was refused and recorded as failed; "
                        "start a new session), or busy and the run asked `reject` (`session_busy`).",
                    ),
                    _DISCARDED,
                    Response(413, f"Body over the documented limit ({MAX_BODY_BYTES // 1024} KiB)."),
                    Response(415, "Content-Type other than application/json or text/plain."),
                    Response(
                        500,
                        "`internal_error`: the turn hit a bug in the host; it is recorded as failed.",
                    ),
                    Response(502, "The model call failed; `code` is the model's error code (also stored)."),
                    _DOWN,
                ),
                request=RunRequestBody,
                text_body=True,
                query=(
                    Param("session_id", "Session to continue (alternative to the body field).", _ID_SCHEMA),
                    Param("thread_id", "Alias of session_id.", _ID_SCHEMA),
                    _USER,
                    Param("wait_for_response", "true (default) or false.", {"type": "boolean"}),
                    Param(
                        "multitask_strategy",
                        "What to do when the session is busy (alternative to the body field).",
                        {"type": "string", "enum": list(MULTITASK_STRATEGIES)},
                    ),
                ),
                headers=(
                    Param("x-ms-wait-for-response", "true (default) or false.", {"type": "boolean"}),
                    Param("Idempotency-Key", "Retry-safe key: the same key and body run once.", _KEY_SCHEMA),
                    Param(
                        "Last-Event-ID",
                        "With `Accept: text/event-stream`: resume after this event id.",
                        _LAST_EVENT_ID_SCHEMA,
                    ),
                ),
            ),
        ),
    ),
    RouteSpec(
        "agent_run_status",
        "agents/{agent}/sessions/{session_id}/runs/{correlation_id}",
        (
            Operation(
                "GET",
                "A run: pending, awaiting_approval (with the calls waiting), succeeded, failed or "
                "cancelled, with its result.",
                (
                    Response(200, "The run.", RunResultBody),
                    _BAD, _FORBIDDEN, _UNKNOWN, _UNREADABLE, _DISCARDED, _DOWN,
                ),
                query=(
                    Param(
                        "wait",
                        "Long-poll: wait up to this many seconds (max 60) for the run to finish (a run "
                        "awaiting approval answers at once).",
                        {"type": "number", "minimum": 0, "maximum": 60},
                    ),
                    _USER,
                ),
            ),
        ),
    ),
    RouteSpec(
        "agent_run_cancel",
        "agents/{agent}/sessions/{session_id}/runs/{correlation_id}/cancel",
        (
            Operation(
                "POST",
                "Cancel a run: a queued run never starts, a running one stops at its next step (a "
                "model call in flight is abandoned within a second where a stream store is "
                "configured); it ends `cancelled`, keeping the steps it finished.",
                (
                    Response(200, "`cancelled`: the run was already; nothing changes.", RunActionBody),
                    Response(202, "`cancel_requested`: poll `Location`.", RunActionBody),
                    _BAD,
                    _FORBIDDEN,
                    Response(
                        404,
                        "Unknown agent or session, or no such run queued or running "
                        "(`run_not_found`).",
                    ),
                    Response(
                        409,
                        "The run has finished (`run_finished`), or the session's stored state is "
                        "unreadable (`state_unreadable`).",
                    ),
                    _DISCARDED,
                    _DOWN,
                ),
                query=(_USER,),
            ),
        ),
    ),
    RouteSpec(
        "agent_run_approval",
        "agents/{agent}/sessions/{session_id}/runs/{correlation_id}/approvals",
        (
            Operation(
                "POST",
                "Decide one tool call the run waits on (`awaiting_approval`): approved, it runs; "
                "rejected, the model is told so, with the reason. The run resumes once every call "
                "of its step is decided.",
                (
                    Response(
                        200,
                        "`decided` (stored), or `unchanged`: the same decision again.",
                        ApprovalDecisionBody,
                    ),
                    Response(
                        202,
                        "`decision_requested`: sent, not seen stored yet; poll `Location`.",
                        ApprovalDecisionBody,
                    ),
                    _BAD,
                    _FORBIDDEN,
                    Response(
                        404,
                        "Unknown agent or session, no such run in progress (`run_not_found`), or "
                        "no such call waiting (`approval_not_found`).",
                    ),
                    Response(
                        409,
                        "The run is not awaiting approval (`run_not_awaiting_approval`), the call "
                        "was decided otherwise (`approval_conflict`), or the session's stored state "
                        "is unreadable (`state_unreadable`).",
                    ),
                    _DISCARDED,
                    Response(413, f"Body over the documented limit ({MAX_BODY_BYTES // 1024} KiB)."),
                    Response(415, "Content-Type other than application/json."),
                    _DOWN,
                ),
                request=ApprovalDecisionRequest,
                query=(_USER,),
            ),
        ),
    ),
    RouteSpec(
        "agent_run_stream",
        "agents/{agent}/sessions/{session_id}/runs/{correlation_id}/stream",
        (
            Operation(
                "GET",
                "A run's events as Server-Sent Events: replayed from the start or after an event id, "
                "then live until the run ends.",
                (
                    Response(
                        200,
                        "`text/event-stream`: `id:` (sequence number), `event:` (type), `data:` (JSON). "
                        "A finished run whose events expired gets its final result as one event.",
                        events=True,
                    ),
                    Response(
                        204,
                        "The reader has the run's terminal event already (`Last-Event-ID`/`after` at "
                        "or past it, or any id once the events expired): nothing more will come. An "
                        "EventSource stops reconnecting on it.",
                        empty=True,
                    ),
                    _BAD,
                    _FORBIDDEN,
                    Response(404, "Unknown agent or session, or no such run (`run_not_found`)."),
                    Response(409, "The session's stored state is unreadable (`state_unreadable`)."),
                    _DISCARDED,
                    _DOWN,
                ),
                query=(
                    Param("after", "Resume after this event id (as Last-Event-ID).", _EVENT_ID_SCHEMA),
                    _USER,
                ),
                headers=(
                    Param(
                        "Last-Event-ID",
                        "Resume after this event id (wins over after).",
                        _LAST_EVENT_ID_SCHEMA,
                    ),
                ),
            ),
        ),
    ),
    RouteSpec(
        "agent_session",
        "agents/{agent}/sessions/{session_id}",
        (
            Operation(
                "GET",
                "A session's stored state (history with usage per turn, state bag).",
                (
                    Response(200, "The session.", SessionBody),
                    _BAD, _FORBIDDEN, _UNKNOWN, _UNREADABLE, _DOWN,
                ),
                query=(_USER,),
            ),
            Operation(
                "DELETE",
                "Delete a session (queued behind its earlier operations).",
                (Response(202, "Delete queued.", SessionActionBody), _BAD, _FORBIDDEN, _UNKNOWN, _DOWN),
                query=(_USER,),
            ),
        ),
    ),
    RouteSpec(
        "agent_session_history",
        "agents/{agent}/sessions/{session_id}/history",
        (
            Operation(
                "GET",
                "A session's whole history, newest first, in pages; each entry exactly as stored.",
                (
                    Response(200, "One page and the cursor of the next.", HistoryPageBody),
                    _BAD,
                    _FORBIDDEN,
                    _UNKNOWN,
                    Response(
                        409,
                        "The stored state is unreadable, or an archived chunk is missing or corrupt "
                        "(`history_unavailable`, naming the `chunk`); nothing is changed.",
                    ),
                    _DOWN,
                ),
                query=(
                    Param(
                        "before",
                        "Cursor: the `next` of the previous page (entries older than it).",
                        {"type": "string", "pattern": CURSOR_PATTERN, "maxLength": 96},
                    ),
                    Param(
                        "limit",
                        "Entries per page (default 100).",
                        {"type": "integer", "minimum": 1, "maximum": 1000},
                    ),
                    _USER,
                ),
            ),
        ),
    ),
    RouteSpec(
        "agent_session_reset",
        "agents/{agent}/sessions/{session_id}/reset",
        (
            Operation(
                "POST",
                "Empty a session's history and state bag (queued behind earlier operations).",
                (
                    Response(202, "Reset queued.", SessionActionBody),
                    _BAD, _FORBIDDEN, _UNKNOWN, _UNREADABLE, _DOWN,
                ),
                query=(_USER,),
            ),
        ),
    ),
    RouteSpec(
        "agent_sessions",
        "agents/{agent}/sessions",
        (
            Operation(
                "GET",
                "An agent's sessions, a page at a time (from the durable entity query; unordered).",
                (
                    Response(200, "One page of sessions (the caller's, and those of no one in particular).",
                             SessionsPageBody),
                    _BAD, _FORBIDDEN, _UNKNOWN, _DOWN,
                ),
                query=(
                    Param("page_size", "Sessions per page, 1-100 (default 20).",
                          {"type": "integer", "minimum": 1, "maximum": 100}),
                    Param("continuation", "The `continuation` of the previous page.",
                          {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,4096}$"}),
                    _USER,
                ),
            ),
        ),
    ),
    RouteSpec(
        "agents_list",
        "agents",
        (
            Operation(
                "GET", "The hosted agents and what each offers.", (Response(200, "Agents.", AgentsBody),)
            ),
        ),
        needs_client=False,
    ),
    RouteSpec(
        "health",
        "health",
        (
            Operation(
                "GET",
                "Configuration valid and durable backend reachable (checked for real).",
                (Response(200, "Healthy.", HealthBody), Response(503, "Unhealthy.", HealthBody)),
            ),
        ),
        anonymous=True,
    ),
    RouteSpec(
        "openapi",
        "openapi.json",
        (Operation("GET", "This OpenAPI 3.1 document.", (Response(200, "The document."),)),),
        anonymous=True,
        needs_client=False,
    ),
)
