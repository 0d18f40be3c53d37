"""Pydantic models of every JSON body the hosting layer reads or writes (HTTP and entity input)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from state import JSON

from .._ids import ID_PATTERN_TEXT, MAX_ID_LENGTH

MultitaskStrategy = Literal["enqueue", "reject", "interrupt", "steer"]
"""What a run asks when its session is busy (hosting._ids.MULTITASK_STRATEGIES)."""

RunStatus = Literal["pending", "awaiting_approval", "succeeded", "failed", "cancelled"]

_ID_FIELD: dict[str, Any] = {"min_length": 1, "max_length": MAX_ID_LENGTH, "pattern": ID_PATTERN_TEXT}


def _integral(value: Any) -> Any:
    # JSON Schema's "integer" (what the OpenAPI document promises) includes 5.0; strict mode
    # alone would reject it. Fractions and non-numbers still fail validation.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


WholeNumber = Annotated[int, BeforeValidator(_integral)]
"""An integer field of a request body: also accepts a JSON number with no fractional part."""


class _Body(BaseModel):
    # Strict: a number where a string is expected is the caller's mistake, not something to coerce.
    model_config = ConfigDict(extra="forbid", strict=True)


class RunOptions(_Body):
    """Per-run options of `POST /api/agents/{agent}/run`. Closed, like the body: a misspelt
    option is a 400, not a setting silently ignored."""

    temperature: float | None = Field(default=None, ge=0, le=2, description="Sampling temperature, 0-2.")
    max_output_tokens: int | None = Field(default=None, ge=1, description="Cap on the answer.")
    max_tool_rounds: int | None = Field(default=None, ge=1, description="Cap on tool-call rounds.")

    # Not `WholeNumber | None`: with a bound, pydantic would publish a non-JSON-Schema "ge".
    _whole = field_validator("max_output_tokens", "max_tool_rounds", mode="before")(_integral)

    def to_dict(self) -> dict[str, JSON]:
        """The options that were set, as the agent runtime takes them."""
        return self.model_dump(exclude_none=True)


class WebhookRequestBody(_Body):
    """Where to POST the run's outcome once it ends (docs/protocols.md "Webhooks")."""

    url: str = Field(
        min_length=1,
        max_length=2048,
        description="An http(s) URL on a host the app setting DURABLE_AGENTS_WEBHOOK_HOSTS names; "
        "the run resource is POSTed there, signed, when the run ends.",
    )
    token: str | None = Field(
        default=None, max_length=512, description="Handed to the payload format (the `a2a` format sends it)."
    )
    format: str = Field(default="run", max_length=32, description="The payload: `run` (the run resource).")


class RunRequestBody(_Body):
    """Body of `POST /api/agents/{agent}/run` (also accepted as `text/plain`: the whole body is
    the message)."""

    # The pattern documents the not-blank rule for clients and request generators; the validator
    # below enforces it (with the `empty_message` code rather than a pattern mismatch).
    message: str = Field(
        min_length=1, description="What to say to the agent.", json_schema_extra={"pattern": r"\S"}
    )
    session_id: str | None = Field(default=None, **_ID_FIELD, description="Omit to start a new session.")
    thread_id: str | None = Field(default=None, **_ID_FIELD, description="Alias of session_id.")
    role: Literal["user", "system"] = "user"
    wait_for_response: bool | None = Field(
        default=None, description="Default true; the x-ms-wait-for-response header does the same."
    )
    response_format: dict[str, JSON] | None = Field(
        default=None, description="A JSON schema the reply must follow (structured output)."
    )
    correlation_id: str | None = Field(
        default=None, **_ID_FIELD, description="Client-chosen run id; a retry with it never runs twice."
    )
    options: RunOptions = Field(default_factory=RunOptions, description="Per-run options for the agent.")
    multitask_strategy: MultitaskStrategy | None = Field(
        default=None,
        description="What to do when the session has a turn running or runs queued (also the "
        "`multitask_strategy` query parameter): `enqueue` (the default) waits its turn; `reject` "
        "answers 409 session_busy; `interrupt` cancels the running and queued runs, then runs; "
        "`steer` adds its messages to the running turn, which the model sees at its next call, and is "
        "answered with that run's answer (JSON only).",
    )
    user_id: str | None = Field(
        default=None,
        description="The user the caller acts for (also the `user_id` query parameter); a session "
        "belongs to the user who created it. Behind App Service Authentication only the signed-in "
        "user's id is accepted.",
        json_schema_extra={"pattern": ID_PATTERN_TEXT},
    )
    webhook: WebhookRequestBody | None = Field(
        default=None, description="POST the run's outcome to this URL when it ends (docs/protocols.md)."
    )

    @field_validator("message")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty or only whitespace")
        return value


class ErrorBody(BaseModel):
    """Why a turn failed (the model service's error)."""

    code: str
    message: str
    retryable: bool = False
    status: int | None = None


class TurnResponseBody(BaseModel):
    """What the agent answered in one turn."""

    text: str
    messages: list[dict[str, JSON]]
    usage: dict[str, JSON] | None = None
    structured: JSON = None


class DecisionBody(BaseModel):
    """What was decided on a call that needed approval."""

    approved: bool
    reason: str | None = None
    decided_at: str
    expired: bool = Field(default=False, description="Rejected because no decision came in time.")


class ApprovalBody(BaseModel):
    """A tool call of the run that needs (or needed) a person's decision before it runs."""

    call_id: str
    name: str = Field(description="The tool.")
    arguments: dict[str, JSON]
    requested_at: str
    step: int = Field(description="The step of the turn the call belongs to.")
    decision: DecisionBody | None = Field(default=None, description="null while it waits.")


class RunResultBody(BaseModel):
    """A run as seen by clients: the run answer of `POST .../run` and the run resource."""

    agent: str
    session_id: str
    correlation_id: str
    status: RunStatus
    response: TurnResponseBody | None = None
    error: ErrorBody | None = None
    location: str | None = Field(default=None, description="URL of the run resource.")
    approvals: list[ApprovalBody] | None = Field(
        default=None,
        description="The calls of the run that needed a decision, with their decisions: while it is "
        "in progress (`awaiting_approval`: those without one are waited on) and once it ended; "
        "null when none did.",
    )


MAX_REASON_LENGTH = 2000
"""The longest reason a decision may give (the model reads it as the tool's result)."""


class ApprovalDecisionRequest(BaseModel):
    """Body of `POST .../runs/{correlation_id}/approvals`: the decision on one call."""

    model_config = ConfigDict(extra="forbid", strict=True)

    call_id: str = Field(min_length=1, max_length=256)
    approved: bool
    reason: str | None = Field(default=None, max_length=MAX_REASON_LENGTH)


class ApprovalDecisionBody(BaseModel):
    """Answer of a decision: `decided` (200: stored; the run resumes once its step's calls are
    all decided), `unchanged` (200: the same decision was made already) or `decision_requested`
    (202: sent, not seen stored yet; poll `location`)."""

    agent: str
    session_id: str
    correlation_id: str
    call_id: str
    approved: bool
    status: Literal["decided", "unchanged", "decision_requested"]
    location: str = Field(description="URL of the run resource.")


class Problem(BaseModel):
    """An RFC 9457 problem document; `code` is stable and meant for programs."""

    model_config = ConfigDict(extra="allow")

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    code: str
    field: str | None = None


class InputMessageBody(BaseModel):
    """One message a run was sent with."""

    role: str
    text: str


class TurnSummary(BaseModel):
    """One turn of a session: its id, outcome and token usage; the runs in progress (running,
    awaiting approval, queued) come after the history's turns, in the order they run."""

    correlation_id: str | None
    status: Literal["succeeded", "failed", "pending", "awaiting_approval"] = Field(
        description="A run in progress is `pending` (running or queued) or `awaiting_approval`, as "
        "its run resource says."
    )
    created_at: str | None = Field(
        default=None, description="When it started; null for a queued run, which has not started."
    )
    usage: dict[str, JSON] | None = None
    error: ErrorBody | None = None
    queued: bool = Field(default=False, description="Waiting behind the turn in progress.")
    approvals: list[ApprovalBody] | None = Field(
        default=None,
        description="The calls of the run that needed a decision, as its run resource lists them "
        "(in progress: those without one are waited on; ended: every one decided); null when none did.",
    )
    messages: list[InputMessageBody] | None = Field(
        default=None,
        description="A run in progress: what it was sent with (the history holds it once the run "
        "ends); null for a finished turn.",
    )


class SessionBody(BaseModel):
    """A session: the stored state exactly as saved, with a per-turn summary."""

    agent: str
    session_id: str
    schema_version: str | None
    turns: list[TurnSummary]
    state_bag: dict[str, JSON]
    state: dict[str, JSON]
    size_bytes: int | None = Field(default=None, description="Size of the stored state (UTF-8 JSON).")
    entries: int | None = None
    """(archived history) Entries of the whole session; `state` holds only the most recent."""
    archived_entries: int | None = None
    """Entries moved to archived chunks (read them through `history_url`)."""
    history_url: str | None = None
    """Pages of the whole history, newest first."""
    expires_at: str | None = None
    """When the session expires if it stays idle (RFC 3339), or None when it never does."""


class HistoryPageBody(BaseModel):
    """One page of a session's history, newest first, each entry exactly as stored."""

    agent: str
    session_id: str
    total: int
    """Entries of the whole session."""
    entries: list[dict[str, JSON]]
    next: str | None
    """The cursor of the next (older) page (`?before=`), or None after the oldest entry."""


class SessionSummary(BaseModel):
    """One session in an agent's session list (from the durable entity query)."""

    session_id: str
    last_operation_time: str | None = None
    schema_version: str | None = None
    turns: int = Field(description="Requests recorded in the history.")
    in_progress: int = Field(
        default=0, description="Runs in progress: the running one (or awaiting approval) and the queued."
    )
    size_bytes: int = Field(description="Size of the stored state (UTF-8 JSON).")
    first_message: str | None = Field(
        default=None,
        description="The first request's text, shortened (of a run in progress when the history has none).",
    )
    readable: bool = Field(description="False when the stored state is not a JSON document.")
    user_id: str | None = Field(
        default=None,
        description="The session's owner: the caller's user, or null for a session of no one in "
        "particular (the list holds no other user's).",
    )


class SessionsPageBody(BaseModel):
    """Answer of `GET /api/agents/{agent}/sessions`: one page of sessions."""

    agent: str
    sessions: list[SessionSummary]
    continuation: str | None = Field(
        default=None, description="Pass as `continuation` for the next page; null on the last page."
    )
    next: str | None = Field(default=None, description="URL of the next page; null on the last page.")


class SessionActionBody(BaseModel):
    """Answer of a session reset or delete: the operation is queued behind earlier turns."""

    agent: str
    session_id: str
    status: Literal["reset_requested", "delete_requested"]


class RunActionBody(BaseModel):
    """Answer of a run's cancel: the run ends `cancelled` unless it finishes first."""

    agent: str
    session_id: str
    correlation_id: str
    status: Literal["cancel_requested", "cancelled"]
    location: str = Field(description="URL of the run resource.")


class ToolInfo(BaseModel):
    """One tool an agent may call."""

    name: str
    description: str | None = None


class AgentInfo(BaseModel):
    """One hosted agent and what it offers."""

    name: str
    entity: str
    description: str | None = None
    tools: list[str]
    context_providers: list[str]
    structured_output: bool
    history_mode: str
    run_url: str
    tool_details: list[ToolInfo] = Field(
        default_factory=list, description="The tools with their descriptions."
    )
    response_schema: dict[str, JSON] | None = Field(
        default=None, description="The JSON schema of the agent's structured output, if it has one."
    )


class AgentsBody(BaseModel):
    """Answer of `GET /api/agents`."""

    agents: list[AgentInfo]


class HealthCheck(BaseModel):
    """The outcome of one health check."""

    ok: bool
    detail: str


class HealthBody(BaseModel):
    """Answer of `GET /api/health`."""

    status: Literal["healthy", "unhealthy"]
    checks: dict[str, HealthCheck]


class MemoryBody(BaseModel):
    """One remembered item of a user, as the memory routes show it (never its embedding)."""

    id: str
    text: str
    agent: str | None = Field(
        description="The agent whose own memory holds it; null: shared by the user's agents."
    )
    metadata: dict[str, JSON]
    source_session: str | None
    created_at: str
    updated_at: str


class MemoriesPageBody(BaseModel):
    """One page of `GET /api/users/{user_id}/memories` (or `/api/me/memories`): newest created
    first; `cursor` (and `next`, the URL of the next page) null on the last page."""

    user_id: str
    items: list[MemoryBody]
    cursor: str | None
    next: str | None


class ErasureBody(BaseModel):
    """A user's erasure (`DELETE /api/users/{user_id}`, `GET /api/users/{user_id}/erasure`): its
    status (`running`, `completed`, `failed`) and its receipt so far, counted when each part was
    found (before it was deleted): memory items, sessions per agent, archived chunks, stream
    events. `finished_at` is null until it completed."""

    user_id: str
    status: str
    started_at: str | None = None
    finished_at: str | None = None
    memories: int = 0
    sessions: dict[str, int] = {}
    archived_chunks: int = 0
    stream_events: int = 0
    location: str
