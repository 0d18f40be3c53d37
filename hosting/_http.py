"""The HTTP API's handlers: run an agent, read runs and sessions, list agents, health.

Each handler validates everything before it touches an entity, answers errors as problem
documents, and never answers 500 because a model is slow: a wait that runs out is a 202 with the
run's location.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import azure.durable_functions as df
import azure.functions as func
from starlette.responses import StreamingResponse

from agents import Agent, TurnResult, turn_result

from ._archived_runs import find_archived_run
from ._entity import MIN_SESSION_BYTES, max_session_bytes_from_env
from ._errors import HostingConfigurationError, ProblemCode, ProblemError
from ._handlers import Handler
from ._history_api import with_history
from ._ids import entity_name
from ._lifecycle import reset_or_delete
from ._models import (
    AgentInfo,
    AgentsBody,
    ErrorBody,
    HealthBody,
    HealthCheck,
    RunResultBody,
    SessionActionBody,
    SessionBody,
    ToolInfo,
    TurnResponseBody,
    TurnSummary,
)
from ._problems import json_response, problem_response
from ._read_pacing import read_pacer
from ._requests import CORRELATION_HEADER, MAX_BODY_BYTES, SESSION_HEADER, RunCall, check_id, parse_run
from ._results import StoredRun, find_stored_run, result_from_stored, stored_bytes
from ._sweeper import ensure_sweepers
from ._unrecorded import unrecorded_run
from ._waiting import (
    Snapshot,
    check_same_request,
    idempotency_conflict,
    read_session,
    state_problem,
    unreadable,
    wait_for_run,
)
from .archive import state_archive
from .streams import (
    RunClaim,
    RunStreams,
    StreamKey,
    StreamStoreUnavailable,
    resume_after,
    start_run,
    wants_event_stream,
)

log = logging.getLogger("hosting.http")


PUBLIC_BASE_URL_ENV = "DURABLE_AGENTS_PUBLIC_BASE_URL"


def public_base_url_from_env() -> str | None:
    """The app's public origin from the environment (see `ApiSettings.public_base_url`)."""
    explicit = os.environ.get(PUBLIC_BASE_URL_ENV, "").strip().rstrip("/")
    if explicit:
        return explicit
    hostname = os.environ.get("WEBSITE_HOSTNAME", "").strip()
    if not hostname:
        return None
    local = hostname.split(":", 1)[0] in ("localhost", "127.0.0.1", "[::1]", "0.0.0.0")
    return f"{'http' if local else 'https'}://{hostname}"


@dataclass(frozen=True)
class ApiSettings:
    """Limits of the HTTP API and of a session's stored state (all documented in docs/hosting.md)."""

    route_prefix: str = "api"
    max_body_bytes: int = MAX_BODY_BYTES
    response_wait_seconds: float = 30.0
    """How long `POST .../run` waits for the turn before answering 202."""
    max_poll_wait_seconds: float = 60.0
    """Upper bound of `?wait=` on the run resource."""
    health_timeout_seconds: float = 5.0
    public_base_url: str | None = field(default_factory=public_base_url_from_env)
    """Origin of the URLs the API hands out (`Location`, run links): `DURABLE_AGENTS_PUBLIC_BASE_URL`,
    else from `WEBSITE_HOSTNAME` (set by Azure, func start and the local host); None gives
    relative URLs. Never taken from a request's Host header."""
    max_session_bytes: int = field(default_factory=max_session_bytes_from_env)
    """Largest stored session state (UTF-8 bytes) a turn may leave; a turn that would exceed it is
    recorded as failed (`session_too_large`). Default 960 KiB or `DURABLE_AGENTS_MAX_SESSION_BYTES`."""

    def url(self, path: str) -> str:
        """The public URL of an API path (``agents/a/sessions/s``), for Location headers and links.

        Never built from a request's Host header: a caller must not choose where it points.
        """
        prefix = f"/{self.route_prefix}" if self.route_prefix else ""
        return f"{self.public_base_url or ''}{prefix}/{path}"

    def __post_init__(self) -> None:
        if isinstance(self.max_session_bytes, bool) or not isinstance(self.max_session_bytes, int):
            raise HostingConfigurationError("ApiSettings.max_session_bytes must be an int")
        if self.max_session_bytes < MIN_SESSION_BYTES:
            raise HostingConfigurationError(
                f"ApiSettings.max_session_bytes must be at least {MIN_SESSION_BYTES}, "
                f"not {self.max_session_bytes}"
            )


# Failed turns the host recorded itself, not the model, answer with their own problem status:
# session_too_large a 409 (the request is fine; the session's state conflicts with it: start a new
# one); internal_error a 500 (our bug; the turn is recorded, so the caller still gets an answer).
# Any other failure is the model's: a 502 carrying its code.
_HOST_FAILURES = frozenset({ProblemCode.SESSION_TOO_LARGE, ProblemCode.INTERNAL_ERROR})


def guarded(handler: Handler) -> Handler:
    """Turn typed problems into problem responses, and storage outages into 503."""

    async def run(req: func.HttpRequest, client: Any) -> func.HttpResponse | StreamingResponse:
        try:
            return await handler(req, client)
        except ProblemError as problem:
            return problem_response(problem)
        except StreamStoreUnavailable as error:
            log.warning("stream store unavailable: %s", error)
            retry = {} if error.retry_after is None else {"Retry-After": str(error.retry_after)}
            return problem_response(ProblemError(ProblemCode.STORAGE_UNAVAILABLE, str(error), headers=retry))
        except (TimeoutError, aiohttp.ClientError, ConnectionError) as error:
            log.warning("durable backend unreachable: %s", error)
            return problem_response(
                ProblemError(
                    ProblemCode.STORAGE_UNAVAILABLE,
                    f"the durable backend could not be reached: {type(error).__name__}",
                    headers={"Retry-After": "1"},
                )
            )
        except Exception:
            # The path only: the query may carry the function key (?code=) or other secrets.
            log.exception("unexpected error in %s %s", req.method, urlsplit(req.url).path)
            return problem_response(ProblemError(ProblemCode.INTERNAL_ERROR, "an unexpected error occurred"))

    return run


class Api:
    """The handlers of the agent routes, bound to the hosted agents."""

    def __init__(self, agents: Sequence[Agent], settings: ApiSettings) -> None:
        self.agents: dict[str, Agent] = {a.name: a for a in agents}
        self.settings = settings
        self.streams: RunStreams | None = None
        """Set by build_app: serves `Accept: text/event-stream` (hosting.streams)."""

    # -- helpers ----------------------------------------------------------------------------

    def _agent(self, req: func.HttpRequest) -> Agent:
        name = req.route_params.get("agent", "")
        agent = self.agents.get(name)
        if agent is None:
            raise ProblemError(
                ProblemCode.UNKNOWN_AGENT,
                f"there is no agent {name!r}; hosted agents: {', '.join(sorted(self.agents))}",
                field="agent",
            )
        return agent

    def agent_for(self, req: func.HttpRequest) -> Agent:
        """The route's `{agent}`, or a 404 problem naming the hosted agents."""
        return self._agent(req)

    def _url(self, req: func.HttpRequest, path: str) -> str:
        return self.settings.url(path)

    def _run_url(self, req: func.HttpRequest, agent: str, session_id: str, correlation_id: str) -> str:
        return self._url(req, f"agents/{agent}/sessions/{session_id}/runs/{correlation_id}")

    def _wait_param(self, req: func.HttpRequest) -> float:
        raw = req.params.get("wait")
        if raw is None:
            return 0.0
        try:
            # ASCII only, as every number a caller sends: float() also reads other scripts' digits.
            value = float(raw) if raw.isascii() else -1.0
        except ValueError:
            value = -1.0
        if not 0 <= value <= self.settings.max_poll_wait_seconds or value != value:
            raise ProblemError(
                ProblemCode.INVALID_FIELD,
                f"'wait' must be a number of seconds from 0 to {self.settings.max_poll_wait_seconds:g}",
                field="wait",
            )
        return value

    def _finished(
        self, req: func.HttpRequest, agent: str, session_id: str, run: StoredRun
    ) -> func.HttpResponse:
        return self.answer(agent, session_id, result_from_stored(run))

    def hosted_agent(self, req: func.HttpRequest) -> Agent:
        """The agent the route names; 404 `unknown_agent` when it is not hosted."""
        return self._agent(req)

    def run_location(self, agent: str, session_id: str, correlation_id: str) -> str:
        """The public URL of a run resource."""
        return self.settings.url(f"agents/{agent}/sessions/{session_id}/runs/{correlation_id}")

    def answer(self, agent: str, session_id: str, result: TurnResult) -> func.HttpResponse:
        """The answer to a finished run: 200 with its body, or raises the problem it failed with."""
        location = self.run_location(agent, session_id, result.correlation_id)
        headers = {
            SESSION_HEADER: session_id,
            CORRELATION_HEADER: result.correlation_id,
            "Location": location,
        }
        error = result.error
        context = {"agent": agent, "session_id": session_id, "correlation_id": result.correlation_id}
        if error is not None and error.code in _HOST_FAILURES:
            raise ProblemError(
                ProblemCode(error.code),
                f"session {session_id!r} of agent {agent!r}: {error.message}",
                headers=headers,
                retryable=error.retryable,
                max_session_bytes=self.settings.max_session_bytes,
                location=location,
                **context,
            )
        if error is not None:
            # The turn's failure is stored in the history too; the client gets the model's code.
            raise ProblemError.model_failure(error, headers=headers, location=location, **context)
        body = RunResultBody(
            agent=agent,
            session_id=session_id,
            correlation_id=result.correlation_id,
            status="succeeded",
            response=_response_body(result),
            location=location,
        )
        return json_response(body, 200, headers)

    # -- routes -----------------------------------------------------------------------------

    async def run(self, req: func.HttpRequest, client: Any) -> func.HttpResponse | StreamingResponse:
        """POST agents/{agent}/run"""
        agent = self._agent(req)
        call = parse_run(req, agent.name, max_bytes=self.settings.max_body_bytes)
        signalled = asyncio.Event()
        try:
            return await self._run(req, client, agent, call, signalled)
        except Exception as error:
            # Once the turn is sent, the caller must get its ids whatever fails next (an outage,
            # a bug): without them a retry runs the turn again, in a new session. Problems the
            # handler raises on purpose carry what the caller needs already.
            if not signalled.is_set() or isinstance(error, ProblemError):
                raise
            log.exception("run %s session %s correlation %s: failed after the turn was sent; answered 202",
                          agent.name, call.session_id, call.correlation_id)
            return self._accepted(req, call)

    async def _run(
        self, req: func.HttpRequest, client: Any, agent: Agent, call: RunCall, signalled: asyncio.Event
    ) -> func.HttpResponse | StreamingResponse:
        entity_id = df.EntityId(entity_name(agent.name), call.session_id)
        streams = self.streams if self.streams is not None and wants_event_stream(req) else None
        key = StreamKey(agent.name, call.session_id, call.correlation_id)
        after = resume_after(req) if streams is not None else 0

        def asked(stored_hash: str | None, stored_request: Mapping[str, Any] | None) -> bool:
            return agent.same_request(call.request, stored_hash, stored_request)

        # Look before sending: a session the entity cannot read is answered 409 at once (no run
        # id is handed out that would stay pending), and a named run may be a retry of one that
        # already finished, answered from the history without sending the turn again. A session
        # id drawn at random for this request names nothing yet, so there is nothing to look at.
        snapshot = Snapshot(False, None) if call.fresh_session else await read_session(client, entity_id)
        if snapshot.exists:
            reason = state_problem(snapshot.document)
            if reason is not None:
                raise unreadable(agent.name, call.session_id, reason)
            done = find_stored_run(snapshot.document, call.correlation_id) if call.retry_safe else None
            if done is None and call.retry_safe:
                done = await find_archived_run(
                    agent.name, call.session_id, snapshot.document, call.correlation_id
                )
            if done is None and call.retry_safe:  # discarded (410), or refused by id only
                done = unrecorded_run(snapshot.document, agent.name, call.session_id, call.correlation_id)
            if done is not None:
                check_same_request(done, asked, agent.name, call.session_id)
                if streams is not None:  # a retry attaches to the finished run's stream
                    return await streams.open(client, key, after, snapshot)
                return self._finished(req, agent.name, call.session_id, done)
            self._refuse_full_session(agent.name, call, snapshot.document)
        elif snapshot.deleted and call.retry_safe:  # a retry of a deleted session's run: 410
            unrecorded_run(snapshot.document, agent.name, call.session_id, call.correlation_id, deleted=True)

        async def send() -> None:
            await client.signal_entity(entity_id, "run", call.request.to_json())
            signalled.set()
            log.info(
                "run %s session %s correlation %s signalled", agent.name, call.session_id, call.correlation_id
            )

        with contextlib.ExitStack() as waiting:
            # A JSON request that waits subscribes to the session's wakeups before it sends the
            # turn, so the turn's end wakes it even when it comes first, and it need not read the
            # state right after sending (the turn has barely been queued).
            waits = call.wait and streams is None
            pace = waiting.enter_context(read_pacer(entity_id.name, entity_id.key)) if waits else None
            # Not stored: send the turn, or attach to the pending run with this id (the same checks
            # for JSON and SSE; hosting/streams/_admission.py).
            sent = await start_run(
                self.streams.store if self.streams is not None else None,
                key,
                RunClaim(agent.request_identity(call.request), live=streams is not None or not call.wait),
                same=lambda request_hash: asked(request_hash, None),
                conflict=lambda: idempotency_conflict(agent.name, call.session_id, call.correlation_id),
                send=send,
                streamed=streams is not None,
            )
            if pace is not None and sent:
                pace.sent()
            # A request that created a session makes sure the agents' expiry sweepers run (once
            # per process: hosting._sweeper); a session itself costs no orchestration.
            created = sent and not snapshot.exists
            watch = partial(ensure_sweepers, client, list(self.agents)) if created else None
            if streams is not None:
                # Once the stream's first answer event is out: a sweeper's start then does not
                # compete with the turn's start for the first token.
                return streams.attach(client, key, after, then=watch)
            if watch is not None:
                await watch()
            if pace is not None:
                run = await wait_for_run(
                    client,
                    entity_id,
                    agent=agent.name,
                    session_id=call.session_id,
                    correlation_id=call.correlation_id,
                    timeout=self.settings.response_wait_seconds,
                    asked=asked,
                    state_checked=True,  # checked above; a session created since is the entity's own
                    pacer=pace,
                )
                if run is not None:
                    return self._finished(req, agent.name, call.session_id, run)
        return self._accepted(req, call)

    def _refuse_full_session(self, agent: str, call: RunCall, document: Any) -> None:
        """409 at once, sending nothing and handing out no run id, when the session is already too
        full for this request: the entity's own first check (stored + asked bytes over
        `max_session_bytes`) on what was just read. Retries against a full session therefore never
        pile up refusal records until even a record no longer fits (which would leave the run
        without an answer)."""
        stored = stored_bytes(document)
        asked = sum(len(m.text.encode("utf-8")) for m in call.request.messages)
        if stored + asked > self.settings.max_session_bytes:
            raise ProblemError(
                ProblemCode.SESSION_TOO_LARGE,
                f"session {call.session_id!r} of agent {agent!r} holds {stored} bytes; with this "
                f"request's {asked} it would pass its limit of {self.settings.max_session_bytes} bytes "
                "(max_session_bytes). Nothing was run or recorded; start a new session (or reset this one)",
                retryable=False,
                max_session_bytes=self.settings.max_session_bytes,
                agent=agent,
                session_id=call.session_id,
            )

    def _accepted(self, req: func.HttpRequest, call: RunCall) -> func.HttpResponse:
        location = self._run_url(req, call.agent, call.session_id, call.correlation_id)
        body = RunResultBody(
            agent=call.agent,
            session_id=call.session_id,
            correlation_id=call.correlation_id,
            status="pending",
            location=location,
        )
        headers = {
            "Location": location,
            "Retry-After": "1",
            SESSION_HEADER: call.session_id,
            CORRELATION_HEADER: call.correlation_id,
        }
        return json_response(body, 202, headers)

    async def run_status(self, req: func.HttpRequest, client: Any) -> func.HttpResponse:
        """GET agents/{agent}/sessions/{session_id}/runs/{correlation_id}"""
        agent = self._agent(req)
        session_id = check_id(req.route_params.get("session_id", ""), "session_id")
        correlation_id = check_id(
            req.route_params.get("correlation_id", ""), "correlation_id", ProblemCode.INVALID_CORRELATION_ID
        )
        wait = self._wait_param(req)
        run = await wait_for_run(
            client,
            df.EntityId(entity_name(agent.name), session_id),
            agent=agent.name,
            session_id=session_id,
            correlation_id=correlation_id,
            timeout=wait,
        )
        location = self._run_url(req, agent.name, session_id, correlation_id)
        headers = {SESSION_HEADER: session_id, CORRELATION_HEADER: correlation_id}
        if run is None:
            body = RunResultBody(
                agent=agent.name,
                session_id=session_id,
                correlation_id=correlation_id,
                status="pending",
                location=location,
            )
            return json_response(body, 200, {**headers, "Retry-After": "1"})
        result = result_from_stored(run)
        error = result.error
        body = RunResultBody(
            agent=agent.name,
            session_id=session_id,
            correlation_id=correlation_id,
            status="failed" if error else "succeeded",
            response=_response_body(result),
            error=None if error is None else ErrorBody.model_validate(error.model_dump(mode="json")),
            location=location,
        )
        return json_response(body, 200, headers)

    async def _existing_session(
        self, req: func.HttpRequest, client: Any
    ) -> tuple[Agent, str, df.EntityId, Snapshot]:
        """The route's agent, session id, entity id and stored snapshot; 404 for no such session."""
        agent = self._agent(req)
        session_id = check_id(req.route_params.get("session_id", ""), "session_id")
        entity_id = df.EntityId(entity_name(agent.name), session_id)
        snapshot = await read_session(client, entity_id)
        if not snapshot.exists:
            raise ProblemError(
                ProblemCode.SESSION_NOT_FOUND,
                f"agent {agent.name!r} has no session {session_id!r}",
                field="session_id",
            )
        return agent, session_id, entity_id, snapshot

    async def session(self, req: func.HttpRequest, client: Any) -> func.HttpResponse:
        """GET / DELETE agents/{agent}/sessions/{session_id}"""
        agent, session_id, _entity_id, snapshot = await self._existing_session(req, client)
        if req.method.upper() == "DELETE":
            archived = state_archive(snapshot.document) is not None
            await reset_or_delete(client, agent.name, session_id, "delete", archived)
            return json_response(
                SessionActionBody(agent=agent.name, session_id=session_id, status="delete_requested"), 202
            )
        reason = state_problem(snapshot.document)
        if reason is not None:
            raise unreadable(agent.name, session_id, reason)
        return json_response(
            with_history(_session_body(agent.name, session_id, snapshot.document), self, snapshot.document)
        )

    async def session_reset(self, req: func.HttpRequest, client: Any) -> func.HttpResponse:
        """POST agents/{agent}/sessions/{session_id}/reset"""
        agent, session_id, _entity_id, snapshot = await self._existing_session(req, client)
        reason = state_problem(snapshot.document)
        if reason is not None:
            raise unreadable(agent.name, session_id, reason)
        archived = state_archive(snapshot.document) is not None
        await reset_or_delete(client, agent.name, session_id, "reset", archived)
        return json_response(
            SessionActionBody(agent=agent.name, session_id=session_id, status="reset_requested"), 202
        )

    async def list_agents(self, req: func.HttpRequest, client: Any) -> func.HttpResponse:
        """GET agents"""
        infos = [describe_agent(a, self._url(req, f"agents/{a.name}/run")) for a in self.agents.values()]
        return json_response(AgentsBody(agents=infos))

    async def health(self, req: func.HttpRequest, client: Any) -> func.HttpResponse:
        """GET health: configuration valid and the durable backend reachable, checked for real."""
        checks: dict[str, HealthCheck] = {}
        try:
            for agent in self.agents.values():
                agent.validate()
            checks["configuration"] = HealthCheck(ok=True, detail=f"{len(self.agents)} agents valid")
        except Exception as error:
            checks["configuration"] = HealthCheck(ok=False, detail=f"{type(error).__name__}: {error}")
        probe = df.EntityId(entity_name(next(iter(self.agents))), "health-probe")
        started = time.perf_counter()
        try:
            await asyncio.wait_for(client.read_entity_state(probe), self.settings.health_timeout_seconds)
            elapsed = (time.perf_counter() - started) * 1000
            checks["storage"] = HealthCheck(ok=True, detail=f"durable backend answered in {elapsed:.0f} ms")
        except Exception as error:
            checks["storage"] = HealthCheck(
                ok=False, detail=f"durable backend unreachable: {type(error).__name__}: {error}"
            )
        if self.streams is not None:
            try:
                checks["stream_store"] = HealthCheck(ok=True, detail=await self.streams.store.ping())
            except StreamStoreUnavailable as error:
                # A dependency that is down makes the app unhealthy; a stream store that is not
                # configured (Azure without Redis) only turns streaming off, which the detail says.
                checks["stream_store"] = HealthCheck(ok=error.retry_after is None, detail=str(error))
        healthy = all(c.ok for c in checks.values())
        body = HealthBody(status="healthy" if healthy else "unhealthy", checks=checks)
        return json_response(body, 200 if healthy else 503)


def _response_body(result: TurnResult) -> TurnResponseBody:
    return TurnResponseBody(
        text=result.text,
        messages=result.messages,
        usage=result.usage,
        structured=result.structured,
    )


def describe_agent(agent: Agent, run_url: str) -> AgentInfo:
    """What `GET /api/agents` says about one agent."""
    described = agent.describe()
    return AgentInfo(
        name=agent.name,
        entity=entity_name(agent.name),
        description=described.get("description") or None,
        tools=[t["name"] for t in described.get("tools", [])],
        context_providers=list(described.get("contextProviders", [])),
        structured_output=described.get("responseSchema") is not None,
        history_mode=str(described.get("historyMode", "local")),
        run_url=run_url,
        tool_details=[
            ToolInfo(name=t["name"], description=t.get("description") or None)
            for t in described.get("tools", [])
        ],
        response_schema=described.get("responseSchema"),
    )


def _session_body(agent: str, session_id: str, document: dict[str, Any]) -> SessionBody:
    data = document.get("data") or {}
    history = data.get("conversationHistory") or []
    turns: list[TurnSummary] = []
    by_id: dict[str | None, int] = {}
    for entry in history:
        if not isinstance(entry, dict):
            continue
        cid = entry.get("correlationId")
        if entry.get("$type") == "request":
            by_id[cid] = len(turns)
            turns.append(TurnSummary(correlation_id=cid, status="pending", created_at=entry.get("createdAt")))
        elif entry.get("$type") == "response":
            failure = turn_result(str(cid or ""), None, entry).error
            summary = TurnSummary(
                correlation_id=cid,
                status="failed" if failure is not None else "succeeded",
                created_at=entry.get("createdAt"),
                usage=entry.get("usage"),
                error=None if failure is None else ErrorBody.model_validate(failure.model_dump(mode="json")),
            )
            index = by_id.pop(cid, None)
            if index is None:
                turns.append(summary)
            else:
                turns[index] = summary.model_copy(update={"created_at": turns[index].created_at})
    bag = data.get("stateBag")
    return SessionBody(
        agent=agent,
        session_id=session_id,
        schema_version=document.get("schemaVersion"),
        turns=turns,
        state_bag=bag if isinstance(bag, dict) else {},
        state=document,
        size_bytes=stored_bytes(document),
    )
