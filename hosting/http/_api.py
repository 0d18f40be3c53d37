"""The HTTP API's handlers: run an agent, read runs and sessions, list agents, health.

Each handler validates everything before it touches an entity, answers errors as problem
documents, and never answers 500 because a model is slow: a wait that runs out is a 202 with the
run's location.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Sequence
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import azure.durable_functions as df
import azure.functions as func
from starlette.responses import Response as StarletteResponse

from agents import Agent, now_iso, turn_result

from .._errors import ProblemCode, ProblemError
from .._handlers import Handler
from .._ids import entity_name
from .._settings import ApiSettings
from ..client import (
    Answerable,
    Answered,
    Awaiting,
    DurableClient,
    Finished,
    Pending,
    ReadPacer,
    Refused,
    RunOutcome,
    Submission,
    Submitter,
    answered_id,
    checked_state,
    read_pacer,
    read_session,
    session_entity,
    state_problem,
    wait_for_run,
)
from ..lifecycle import reset_or_delete, start_approval_expiry, start_session_ended, sweepers_of
from ..stored import StoredDocument, StoredRun, TurnEntry, Viewer, WaitingRun, approvals_of
from ..streams import StreamKey, StreamStoreUnavailable, claimed_user, terminal_watch
from ..webhooks import EndedRun, Rendered, delivery_of, start_delivery
from ._answers import Answers, approval_body
from ._approvals import Decided, decide, decide_approval
from ._cancel import Cancelled, cancel, cancel_run
from ._history import with_history
from ._lookup import claimed_by_other, existing_session, hosted_agent
from ._models import (
    AgentInfo,
    AgentsBody,
    ApprovalDecisionRequest,
    ErrorBody,
    HealthBody,
    HealthCheck,
    InputMessageBody,
    SessionActionBody,
    SessionBody,
    ToolInfo,
    TurnSummary,
)
from ._problems import json_response, problem_response
from ._refusals import no_session, refusal, refused, unreadable
from ._requests import RunCall, check_id, parse_run
from ._sse import RunStreams, StreamLive, StreamOpened
from ._submitted import RunAccepted, RunFinished, RunStreamed, RunSubmitted
from ._users import caller_user

log = logging.getLogger("hosting.http")


def guarded(handler: Handler) -> Handler:
    """Turn typed problems into problem responses, and storage outages into 503."""

    async def run(req: func.HttpRequest, client: Any) -> func.HttpResponse | StarletteResponse:
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

    def __init__(
        self, agents: Sequence[Agent], settings: ApiSettings, answers: Answers, streams: RunStreams
    ) -> None:
        self.agents: dict[str, Agent] = {a.name: a for a in agents}
        self.settings = settings
        self.answers = answers
        self.streams = streams
        self.submitter = Submitter(
            settings.max_session_bytes, log, sweepers_of(list(self.agents)), streams.store
        )
        """Serves `Accept: text/event-stream` (hosting.http._sse)."""

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

    def _finished(self, agent: str, session_id: str, run: StoredRun) -> func.HttpResponse:
        return self.answers.answer(agent, session_id, run.result(), run.approvals)

    async def run_outcome(
        self,
        client: DurableClient,
        agent: str,
        session_id: str,
        correlation_id: str,
        user: Viewer,
        timeout: float,
    ) -> Answerable:
        """A run's outcome as its run resource reads it, for the protocol edges: waited for up
        to `timeout`, its refusals raised as the route's problems (another user's session is a
        404, as if there were none), a pause's expiry started."""
        outcome = await wait_for_run(
            client,
            session_entity(agent, session_id),
            agent=agent,
            session_id=session_id,
            correlation_id=correlation_id,
            timeout=timeout,
            user=user,
        )
        answerable = self._answerable(outcome, agent, session_id, correlation_id)
        if isinstance(answerable, Awaiting):
            await start_approval_expiry(client, agent, session_id, correlation_id, answerable.approvals)
        return answerable

    async def run_known(
        self, client: DurableClient, agent: str, session_id: str, correlation_id: str, user: Viewer
    ) -> bool:
        """Whether an unfinished run is queued, running or was sent through this app, and is
        `user`'s: a protocol edge's 404 otherwise (a first run's session is not stored yet: its
        stream claim names its user; a run of no one in particular is everyone's)."""
        snapshot = await read_session(client, session_entity(agent, session_id))
        stored = snapshot.stored
        if snapshot.exists and stored.visible_to(user) and correlation_id in stored.waiting_ids():
            return True
        claim = await self.streams.store.claimed(StreamKey(agent, session_id, correlation_id))
        if claim is None:
            return False
        owner = claimed_user(claim.request_hash)[1]
        return owner is None or owner == user

    def _refuse(self, outcome: RunOutcome, agent: str, session_id: str, correlation_id: str) -> None:
        problem = refusal(outcome, agent, session_id, correlation_id, self.settings.max_session_bytes)
        if problem is not None:
            raise problem

    def _answerable(
        self, outcome: RunOutcome, agent: str, session_id: str, correlation_id: str
    ) -> Answerable:
        """The outcome, once its refusal (if it is one) is raised as its problem."""
        match outcome:
            case Finished() | Pending() | Awaiting():
                return outcome
            case _:
                self._refuse(outcome, agent, session_id, correlation_id)
                raise AssertionError(f"an outcome without a problem: {outcome!r}")  # every other has one

    # -- routes -----------------------------------------------------------------------------

    async def run(
        self, req: func.HttpRequest, client: DurableClient
    ) -> func.HttpResponse | StarletteResponse:
        """POST agents/{agent}/run"""
        agent = hosted_agent(self.agents, req)
        call = parse_run(req, agent.name, max_bytes=self.settings.max_body_bytes)
        return await self.render_submitted(client, await self.submit_run(client, agent, call))

    async def render_submitted(
        self, client: DurableClient, submitted: RunSubmitted
    ) -> func.HttpResponse | StarletteResponse:
        """What submitting a run came to, as the run route answers it."""
        match submitted:
            case RunFinished(agent=agent, session_id=session_id, run=run):
                return self._finished(agent, session_id, run)
            case RunAccepted(agent=agent, session_id=session_id, correlation_id=cid, approvals=paused):
                return self.answers.accepted(agent, session_id, cid, paused)
            case RunStreamed():
                return self.streams.render(client, await self.opened_stream(client, submitted))

    async def opened_stream(self, client: DurableClient, streamed: RunStreamed) -> StreamOpened:
        """The stream a streamed run follows: attached to, or (a retry of a finished run)
        opened from the session as submit_run read it (its refusals raised)."""
        if streamed.snapshot is None:
            return StreamLive(streamed.key, streamed.after, streamed.then)
        return await self.streams.opened(client, streamed.key, streamed.after, streamed.snapshot)

    async def submit_run(self, client: DurableClient, agent: Agent, call: RunCall) -> RunSubmitted:
        """Submit a checked run (`run_call`, `parse_run`): the one submit path of the run route
        and the protocol edges. Refusals are raised as their problems, before anything is sent."""
        signalled = asyncio.Event()
        try:
            return await self._submit_run(client, agent, call, signalled)
        except Exception as error:
            # Once the turn is sent, the caller must get its ids whatever fails next (an outage,
            # a bug): without them a retry runs the turn again, in a new session. Problems the
            # handler raises on purpose carry what the caller needs already.
            if not signalled.is_set() or isinstance(error, ProblemError):
                raise
            log.exception(
                "run %s session %s correlation %s: failed after the turn was sent; answered 202",
                agent.name, call.session_id, call.correlation_id,
            )
            return RunAccepted(call.agent, call.session_id, call.correlation_id)

    async def _submit_run(
        self,
        client: DurableClient,
        agent: Agent,
        call: RunCall,
        signalled: asyncio.Event,
    ) -> RunSubmitted:
        streamed = call.event_stream
        submission = Submission(
            agent,
            call.session_id,
            call.request,
            fresh_session=call.fresh_session,
            retry_safe=call.retry_safe,
            user_id=call.user_id,
            multitask_strategy=call.multitask_strategy,
        )
        key, entity_id = submission.stream_key, submission.entity_id
        # Before the turn: the delivery is stored before the run can end (a value the submit
        # path runs just before the signal: nothing calls back into this module).
        webhook = call.webhook
        deliver = None if webhook is None else partial(
            start_delivery, client, agent.name, call.session_id, call.correlation_id, call.user_id, webhook
        )

        with contextlib.ExitStack() as waiting:
            # A JSON request that waits subscribes to the session's wakeups before it sends the
            # turn, so the turn's end wakes it even when it comes first, and it need not read the
            # state right after sending (the turn has barely been queued).
            waits = call.wait and not streamed
            pace = waiting.enter_context(read_pacer(entity_id.name, entity_id.key)) if waits else None
            submitted = await self.submitter.submit(
                client,
                submission,
                live=streamed or not call.wait,
                streamed=streamed,
                before_send=deliver,
                on_sent=signalled.set,
            )
            if isinstance(submitted, Refused):
                limit = self.settings.max_session_bytes
                raise refused(submitted.outcome, agent.name, call.session_id, call.correlation_id, limit)
            if isinstance(submitted, Answered):
                if streamed:  # a retry attaches to the finished run's stream
                    return RunStreamed(key, call.after, snapshot=submitted.snapshot)
                return RunFinished(call.agent, call.session_id, submitted.run)
            sent, then = submitted.sent, submitted.then
            if pace is not None and sent:
                pace.sent()
            if pace is not None:
                # Wherever the entity runs, its terminal event wakes this wait (no polling).
                pace.watched = True
                waiting.enter_context(terminal_watch(self.streams.store, key, pace.watch_ended))
            if streamed:
                # Once the stream's first answer event is out: a sweeper's start then does not
                # compete with the turn's start for the first token.
                return RunStreamed(key, call.after, then=then)
            if then is not None:
                await then()
            if pace is not None:
                return await self._waited(client, call, submission, pace)
        return RunAccepted(call.agent, call.session_id, call.correlation_id)

    async def _waited(
        self, client: DurableClient, call: RunCall, submission: Submission, pace: ReadPacer
    ) -> RunSubmitted:
        """A sent run waited for up to the response wait (woken by its end)."""
        outcome = await wait_for_run(
            client,
            submission.entity_id,
            agent=call.agent,
            session_id=call.session_id,
            correlation_id=call.correlation_id,
            timeout=self.settings.response_wait_seconds,
            asked=submission.same_request,
            state_checked=True,  # checked above; a session created since is the entity's own
            pacer=pace,
            user=call.user_id,
        )
        # A run that joined a running run (`steer`) is answered as that run.
        target = answered_id(outcome, call.correlation_id)
        match self._answerable(outcome, call.agent, call.session_id, target):
            case Finished(run=run):
                return RunFinished(call.agent, call.session_id, run)
            case Awaiting(approvals=paused):
                await start_approval_expiry(client, call.agent, call.session_id, target, paused)
                return RunAccepted(call.agent, call.session_id, target, paused)
            case Pending():
                return RunAccepted(call.agent, call.session_id, target)

    async def run_status(self, req: func.HttpRequest, client: DurableClient) -> func.HttpResponse:
        """GET agents/{agent}/sessions/{session_id}/runs/{correlation_id}"""
        agent = hosted_agent(self.agents, req)
        session_id = check_id(req.route_params.get("session_id", ""), "session_id")
        correlation_id = check_id(
            req.route_params.get("correlation_id", ""), "correlation_id", ProblemCode.INVALID_CORRELATION_ID
        )
        wait = self._wait_param(req)
        user = caller_user(req)
        try:
            answer = await self._run_resource(client, agent.name, session_id, correlation_id, wait, user)
        except ProblemError as problem:
            # A run that ended without an answer (410 discarded, 409 refused) is still the
            # caller's: its webhook's outcome goes on the problem. Not on a 404 (another user's).
            if problem.status in (409, 410):
                delivery = await delivery_of(client, agent.name, session_id, correlation_id)
                if delivery is not None:
                    problem.extensions["webhook"] = delivery
            raise
        delivery = await delivery_of(client, agent.name, session_id, correlation_id)
        if delivery is None:
            return answer
        body = json.loads(answer.get_body())
        body["webhook"] = delivery
        return func.HttpResponse(
            json.dumps(body, ensure_ascii=False),
            status_code=answer.status_code,
            headers={k: v for k, v in answer.headers.items() if k.lower() != "content-type"},
            mimetype="application/json",
            charset="utf-8",
        )

    async def render_run(self, client: DurableClient, run: EndedRun) -> Rendered:
        """The `run` webhook payload: the run resource as `GET .../runs/{id}` answers it (its
        problem document when the run is gone: a reset, delete or expiry discarded it)."""
        answer = await self._guarded_resource(client, run)
        return Rendered(answer.get_body())

    async def _guarded_resource(self, client: DurableClient, run: EndedRun) -> func.HttpResponse:
        try:
            return await self._run_resource(
                client, run.agent, run.session_id, run.correlation_id, 0.0, run.user_id
            )
        except ProblemError as problem:
            return problem_response(problem)

    async def _run_resource(
        self, client: DurableClient, agent_name: str, session_id: str, correlation_id: str,
        wait: float, user: str | None,
    ) -> func.HttpResponse:
        agent = self.agents[agent_name]
        entity_id = df.EntityId(entity_name(agent.name), session_id)
        key = StreamKey(agent.name, session_id, correlation_id)
        if await claimed_by_other(self.streams.store, key, user):
            # Another user's run: theirs alone while their session is not stored (once it is, its
            # owner decides, below).
            snapshot = await read_session(client, entity_id)
            if not (snapshot.exists or snapshot.deleted):
                raise no_session(agent.name, session_id)
        outcome = await wait_for_run(
            client,
            entity_id,
            agent=agent.name,
            session_id=session_id,
            correlation_id=correlation_id,
            timeout=wait,
            user=user,
        )
        # A run sent with `steer` that joined a running run answers as that run (named in the body).
        correlation_id = answered_id(outcome, correlation_id)
        match self._answerable(outcome, agent.name, session_id, correlation_id):
            case Finished(run=run):
                result, kept = run.result(), run.approvals
                return self.answers.status(agent.name, session_id, correlation_id, result, None, kept)
            case Awaiting(approvals=paused):
                await start_approval_expiry(client, agent.name, session_id, correlation_id, paused)
                return self.answers.status(agent.name, session_id, correlation_id, None, paused)
            case Pending():
                return self.answers.status(agent.name, session_id, correlation_id, None)

    async def run_approval(self, req: func.HttpRequest, client: DurableClient) -> func.HttpResponse:
        """POST agents/{agent}/sessions/{session_id}/runs/{correlation_id}/approvals"""
        return await decide_approval(req, client, self.agents, self.answers, self._answerable)

    async def run_cancel(self, req: func.HttpRequest, client: DurableClient) -> func.HttpResponse:
        """POST agents/{agent}/sessions/{session_id}/runs/{correlation_id}/cancel"""
        return await cancel_run(req, client, self.agents, self.answers, self.streams.store, self._answerable)

    async def decide(
        self,
        client: DurableClient,
        agent: str,
        session_id: str,
        correlation_id: str,
        user: str | None,
        decision: ApprovalDecisionRequest,
    ) -> Decided:
        """Decide one call a run waits on, as the approvals route does (its problems raised)."""
        return await decide(
            client, agent, session_id, correlation_id, user, decision, self.answers, self._answerable
        )

    async def cancel(
        self, client: DurableClient, agent: str, session_id: str, correlation_id: str, user: str | None
    ) -> Cancelled:
        """Cancel a run, as the cancel route does (its problems raised)."""
        store = self.streams.store
        return await cancel(
            client, agent, session_id, correlation_id, user, self.answers, store, self._answerable
        )

    async def session(self, req: func.HttpRequest, client: DurableClient) -> func.HttpResponse:
        """GET / DELETE agents/{agent}/sessions/{session_id}"""
        agent, session_id, _entity_id, snapshot = await existing_session(self.agents, req, client)
        if req.method.upper() == "DELETE":
            epoch, ended_at = snapshot.stored.archive_epoch, now_iso()  # the end's time: before it
            await reset_or_delete(client, agent.name, session_id, "delete", epoch)
            await start_session_ended(client, agent, session_id, "delete", snapshot.document, epoch, ended_at)
            return json_response(
                SessionActionBody(agent=agent.name, session_id=session_id, status="delete_requested"), 202
            )
        checked = checked_state(snapshot.document)
        if checked.problem is not None:
            raise unreadable(agent.name, session_id, checked.problem)
        body = _session_body(agent.name, session_id, snapshot.document, checked.size_bytes)
        return json_response(with_history(body, self.settings, snapshot.document))

    async def session_reset(self, req: func.HttpRequest, client: DurableClient) -> func.HttpResponse:
        """POST agents/{agent}/sessions/{session_id}/reset"""
        agent, session_id, _entity_id, snapshot = await existing_session(self.agents, req, client)
        reason = state_problem(snapshot.document)
        if reason is not None:
            raise unreadable(agent.name, session_id, reason)
        epoch, ended_at = snapshot.stored.archive_epoch, now_iso()  # the end's time: before it
        await reset_or_delete(client, agent.name, session_id, "reset", epoch)
        await start_session_ended(client, agent, session_id, "reset", snapshot.document, epoch, ended_at)
        return json_response(
            SessionActionBody(agent=agent.name, session_id=session_id, status="reset_requested"), 202
        )

    async def list_agents(self, req: func.HttpRequest, client: DurableClient) -> func.HttpResponse:
        """GET agents"""
        infos = [describe_agent(a, self.settings.url(f"agents/{a.name}/run")) for a in self.agents.values()]
        return json_response(AgentsBody(agents=infos))

    async def health(self, req: func.HttpRequest, client: DurableClient) -> func.HttpResponse:
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
        try:
            checks["stream_store"] = HealthCheck(ok=True, detail=await self.streams.store.ping())
        except StreamStoreUnavailable as error:
            # A dependency that is down makes the app unhealthy; a stream store that is not
            # configured (Azure without Redis) only turns streaming off, which the detail says.
            checks["stream_store"] = HealthCheck(ok=error.retry_after is None, detail=str(error))
        healthy = all(c.ok for c in checks.values())
        body = HealthBody(status="healthy" if healthy else "unhealthy", checks=checks)
        return json_response(body, 200 if healthy else 503)


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


def _turn_summary(turn: TurnEntry) -> TurnSummary:
    if turn.response is None:
        return TurnSummary(correlation_id=turn.correlation_id, status="pending", created_at=turn.created_at)
    failure = turn_result(str(turn.correlation_id or ""), None, turn.response).error
    return TurnSummary(
        correlation_id=turn.correlation_id,
        status="failed" if failure is not None else "succeeded",
        created_at=turn.created_at,
        usage=turn.usage,
        error=None if failure is None else ErrorBody.model_validate(failure.model_dump(mode="json")),
        approvals=[approval_body(a) for a in turn.approvals] or None,
    )


def _waiting_summary(document: dict[str, Any], run: WaitingRun) -> TurnSummary:
    """A run in progress as the turns list it, with the status its run resource answers."""
    paused = None if run.queued else approvals_of(document, run.correlation_id)
    return TurnSummary(
        correlation_id=run.correlation_id,
        status="awaiting_approval" if paused is not None and paused.waiting else "pending",
        created_at=run.started_at,
        queued=run.queued,
        approvals=[approval_body(a) for a in paused.approvals] if paused and paused.approvals else None,
        messages=[InputMessageBody(role=m["role"], text=m["text"]) for m in run.messages],
    )


def _session_body(agent: str, session_id: str, document: dict[str, Any], size_bytes: int) -> SessionBody:
    """`size_bytes`: the stored size, as the state check measured it (StoredDocument.size_bytes)."""
    stored = StoredDocument(document)
    turns = [_turn_summary(turn) for turn in stored.turns()]
    listed = {t.correlation_id for t in turns}
    waiting = [_waiting_summary(document, r) for r in stored.waiting_runs() if r.correlation_id not in listed]
    return SessionBody(
        agent=agent,
        session_id=session_id,
        schema_version=stored.schema_version,
        turns=turns + waiting,
        state_bag=stored.state_bag,
        state=document,
        size_bytes=size_bytes,
    )
