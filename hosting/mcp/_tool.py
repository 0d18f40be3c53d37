"""One agent as an MCP tool: the function the MCP extension's tool trigger calls.

The extension hands the function the tool call's context as JSON text (`name`, `arguments`,
`sessionid`, `clientinfo`, `transport`) and, with `useResultSchema`, takes back an `McpToolResult`
JSON document whose `content` is the MCP `CallToolResult` (docs/mcp.md). The turn is an ordinary
run: the entity is signalled with a `TurnRequest`, so it is stored in the session, answered once
however often the signal is delivered, and visible in the sessions API.

A failed turn, a bad argument or an unreachable backend is a tool result with `isError` and the
problem's text (what MCP asks of tool failures), never an exception: an exception would reach
the client as a protocol error or a generic message that hides the cause.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass
from typing import Any

import aiohttp

from agents import Agent, InputMessage, InvalidTurnRequest, TurnRequest

from .._errors import ProblemCode, ProblemError
from .._ids import new_session_id
from .._settings import ApiSettings
from ..client import (
    Answered,
    Awaiting,
    DurableClient,
    Finished,
    Refused,
    RunOutcome,
    Submission,
    Submitter,
    wait_for_run,
)
from ..http import (
    acting_user,
    check_id,
    check_user_id,
    easy_auth_enabled,
    principal_of,
    refusal,
    refused,
)
from ..lifecycle import start_approval_expiry, sweepers_of
from ..stored import RunApprovals
from ._config import QUERY, SESSION_ID, USER_ID, ToolSpec

log = logging.getLogger("hosting.mcp")

MAX_QUERY_CHARS = 64 * 1024
"""Longest accepted `query` (characters); the HTTP API's body limit is of the same order."""


@dataclass(frozen=True)
class ToolCall:
    """A validated tool call: the session it continues (or starts) and the turn to run."""

    session_id: str
    new_session: bool
    request: TurnRequest
    user_id: str | None = None


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_result(content: list[dict[str, Any]], structured: dict[str, Any] | None, is_error: bool) -> str:
    """The `McpToolResult` JSON the extension turns into the MCP `CallToolResult` it sends."""
    call_result: dict[str, Any] = {"content": content, "isError": is_error}
    if structured is not None:
        call_result["structuredContent"] = structured
    return json.dumps(
        {
            "type": "call_tool_result",
            "content": json.dumps(call_result, ensure_ascii=False),
            "structuredContent": None if structured is None else json.dumps(structured, ensure_ascii=False),
        },
        ensure_ascii=False,
    )


def error_result(message: str, *, status: str = "failed", **details: Any) -> str:
    """An `isError` tool result: the problem's text, and the same as structured content."""
    return tool_result([_text(message)], {"status": status, "error": message, **details}, True)


def _context(context: Any) -> dict[str, Any]:
    if isinstance(context, bytes | bytearray):
        context = context.decode("utf-8", errors="replace")
    if isinstance(context, str):
        try:
            context = json.loads(context)
        except ValueError as error:
            raise ProblemError(
                ProblemCode.INVALID_JSON, f"the tool call context is not JSON: {error}"
            ) from error
    if not isinstance(context, dict):
        raise ProblemError(ProblemCode.INVALID_TYPE, "the tool call context is not a JSON object")
    return context


def _arguments(context: dict[str, Any]) -> dict[str, Any]:
    arguments = context.get("arguments")
    if arguments is None:
        return {}
    if not isinstance(arguments, dict):
        raise ProblemError(ProblemCode.INVALID_TYPE, "the tool call's arguments are not an object")
    return arguments


def request_headers(context: dict[str, Any]) -> dict[str, str]:
    """The HTTP request headers the MCP extension puts in the tool call's context
    (`transport.properties.headers`: every header of the request that carried the call, a repeated
    one's values joined with commas; azure-functions-mcp-extension,
    `McpTriggerTransportHelper.GetTransportInformation`). Their names keep the request's case."""
    transport = context.get("transport")
    properties = transport.get("properties") if isinstance(transport, dict) else None
    headers = properties.get("headers") if isinstance(properties, dict) else None
    if not isinstance(headers, dict):
        return {}
    return {name: value for name, value in headers.items() if isinstance(value, str)}


def parse_call(raw_context: Any) -> ToolCall:
    """Validate the arguments of a tool call (`query` required, `session_id` optional) and find
    the user it acts for."""
    context = _context(raw_context)
    arguments = _arguments(context)
    query = arguments.get(QUERY)
    if not isinstance(query, str):
        raise ProblemError(
            ProblemCode.MISSING_FIELD if query is None else ProblemCode.INVALID_TYPE,
            f"'{QUERY}' must be a string with what to ask the agent",
            field=QUERY,
        )
    if len(query) > MAX_QUERY_CHARS:
        raise ProblemError(
            ProblemCode.INVALID_FIELD,
            f"'{QUERY}' must be at most {MAX_QUERY_CHARS} characters (got {len(query)})",
            field=QUERY,
        )
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ProblemError(
            ProblemCode.INVALID_ENCODING,
            f"'{QUERY}' holds a lone UTF-16 surrogate (character {error.start}), which is not text",
            field=QUERY,
        ) from None
    raw_session = arguments.get(SESSION_ID)
    if raw_session is not None and not isinstance(raw_session, str):
        raise ProblemError(ProblemCode.INVALID_TYPE, f"'{SESSION_ID}' must be a string", field=SESSION_ID)
    # An empty session_id is what many clients send for "not given".
    session_id = check_id(raw_session, SESSION_ID) if raw_session else None
    try:
        request = TurnRequest(
            correlation_id=uuid.uuid4().hex, messages=[InputMessage(role="user", text=query)]
        )
    except InvalidTurnRequest as error:
        raise ProblemError(ProblemCode.EMPTY_MESSAGE, f"'{QUERY}': {error.message}", field=QUERY) from error
    user = _user_of(arguments, request_headers(context))
    return ToolCall(session_id or new_session_id(), session_id is None, request, user)


def _user_of(arguments: dict[str, Any], headers: dict[str, str]) -> str | None:
    """Who the call acts for, by the HTTP edge's rule: the `user_id` argument (empty: not given);
    behind App Service Authentication the signed-in principal of the call's HTTP request, which
    `user_id` may only repeat."""
    raw = arguments.get(USER_ID)
    named = None if raw is None or raw == "" else check_user_id(raw, USER_ID)
    return acting_user(named, principal_of(headers) if easy_auth_enabled() else None)


class AgentTool:
    """The tool trigger function's body for one agent (called with the context and the client)."""

    def __init__(
        self,
        agent: Agent,
        spec: ToolSpec,
        wait_seconds: float,
        submitter: Submitter | None = None,
        settings: ApiSettings | None = None,
    ) -> None:
        self.settings = settings or ApiSettings()
        """Where the run resources are (a call awaiting approval names its run's URL)."""
        self.agent = agent
        self.spec = spec
        self.wait_seconds = wait_seconds
        limit = self.settings.max_session_bytes
        self.submitter = submitter or Submitter(limit, log, sweepers_of([agent.name]))
        """How a call's turn is sent: the same checks and sweeper start as `POST .../run`."""

    async def __call__(self, context: Any, client: DurableClient) -> str:
        try:
            call = parse_call(context)
        except ProblemError as problem:
            return error_result(f"{problem.code}: {problem.detail}", code=problem.code)
        ids = {"session_id": call.session_id, "correlation_id": call.request.correlation_id}
        try:
            return await self._run(call, client)
        except ProblemError as problem:
            return error_result(f"{problem.code}: {problem.detail}", code=problem.code, **ids)
        except (TimeoutError, aiohttp.ClientError, ConnectionError) as error:
            log.warning("mcp %s: durable backend unreachable: %s", self.agent.name, error)
            return error_result(
                f"{ProblemCode.STORAGE_UNAVAILABLE}: the durable backend could not be reached "
                f"({type(error).__name__}); try again",
                code=str(ProblemCode.STORAGE_UNAVAILABLE),
                **ids,
            )
        except Exception:
            log.exception("mcp %s: unexpected error", self.agent.name)
            return error_result(
                f"{ProblemCode.INTERNAL_ERROR}: an unexpected error occurred",
                code=str(ProblemCode.INTERNAL_ERROR),
                **ids,
            )

    def _awaiting(self, session_id: str, correlation_id: str, paused: RunApprovals) -> str:
        """The turn paused for tool approvals: which calls, and where to decide them."""
        url = self.settings.url(f"agents/{self.agent.name}/sessions/{session_id}/runs/{correlation_id}")
        calls = ", ".join(f"{a.name} (call {a.call_id})" for a in paused.waiting)
        return error_result(
            f"the {self.agent.name} agent waits for a person to approve {calls}; decide with POST "
            f"{url}/approvals, then read the run at {url}",
            status="awaiting_approval",
            location=url,
            approvals=[
                {"call_id": a.call_id, "name": a.name, "arguments": a.arguments} for a in paused.waiting
            ],
            session_id=session_id,
            correlation_id=correlation_id,
        )

    def _refuse(self, outcome: RunOutcome, session_id: str, correlation_id: str) -> None:
        limit = self.submitter.max_session_bytes
        problem = refusal(outcome, self.agent.name, session_id, correlation_id, limit)
        if problem is not None:
            raise problem

    async def _run(self, call: ToolCall, client: DurableClient) -> str:
        agent = self.agent.name
        submission = Submission(
            self.agent, call.session_id, call.request, fresh_session=call.new_session, user_id=call.user_id
        )
        entity_id, correlation_id = submission.entity_id, submission.correlation_id
        # The tool call waits for its answer as a waiting JSON run does: claimed, not streamed live.
        submitted = await self.submitter.submit(client, submission, live=False)
        if isinstance(submitted, Refused):
            limit = self.submitter.max_session_bytes
            raise refused(submitted.outcome, agent, call.session_id, correlation_id, limit)
        outcome: RunOutcome
        if isinstance(submitted, Answered):  # not for a fresh run id (never retry-safe): its run all the same
            outcome = Finished(submitted.run)
        else:
            if submitted.then is not None:
                await submitted.then()
            outcome = await wait_for_run(
                client,
                entity_id,
                agent=agent,
                session_id=call.session_id,
                correlation_id=correlation_id,
                timeout=self.wait_seconds,
                state_checked=not call.new_session,
                user=call.user_id,
            )
        self._refuse(outcome, call.session_id, correlation_id)
        ids = {"session_id": call.session_id, "correlation_id": correlation_id}
        match outcome:
            case Awaiting(approvals=paused):
                await start_approval_expiry(client, agent, call.session_id, correlation_id, paused)
                return self._awaiting(call.session_id, correlation_id, paused)
            case Finished(run=run):
                result = run.result()
            case _:  # pending (a refusal was raised above)
                return error_result(
                    f"the {agent} agent is still working after {self.wait_seconds:g} s; the answer will be "
                    f"stored in session {call.session_id} (run {correlation_id})",
                    status="pending",
                    **ids,
                )
        if result.error is not None:
            return error_result(
                f"the {agent} agent could not answer: {result.error.code}: {result.error.message}",
                code=result.error.code,
                retryable=result.error.retryable,
                **ids,
            )
        structured: dict[str, Any] = {"status": "succeeded", **ids, "text": result.text}
        if self.spec.structured:
            structured["structured"] = result.structured
        content = [
            _text(result.text),
            _text(f"session_id: {call.session_id} (pass it as session_id to continue this conversation)"),
        ]
        return tool_result(content, structured, False)
