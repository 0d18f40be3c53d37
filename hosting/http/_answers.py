"""How the API answers a run, from values: a finished run's `TurnResult` becomes its answer, a
value (`RunAnswer`: the 200 body, or the problem it failed with), a run not finished yet the 202
(or 200 pending) body. `POST .../run`, `GET .../runs/{id}` and the SSE terminal events all render
a run through here; a failed turn is an ordinary answer, never raised."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import azure.functions as func

from agents import TurnResult

from .._errors import ProblemCode, ProblemError
from .._settings import ApiSettings
from ..stored import Approval, RunApprovals
from ._models import ApprovalBody, ErrorBody, RunResultBody, TurnResponseBody
from ._problems import json_response, problem_response
from ._requests import CORRELATION_HEADER, SESSION_HEADER

# Failed turns the host recorded itself, not the model, answer with their own problem status:
# session_too_large a 409 (the request is fine; the session's state conflicts with it: start a new
# one); internal_error a 500 (our bug; the turn is recorded, so the caller still gets an answer).
# Any other failure is the model's: a 502 carrying its code.
# A cancelled run is a 409 run_cancelled: the request was fine, its run was stopped; a run that
# asked `reject` of a busy session a 409 session_busy.
_HOST_FAILURES = frozenset(
    {
        ProblemCode.SESSION_TOO_LARGE,
        ProblemCode.INTERNAL_ERROR,
        ProblemCode.RUN_CANCELLED,
        ProblemCode.SESSION_BUSY,
    }
)


def is_cancelled(result: TurnResult) -> bool:
    """Whether the run was cancelled (recorded as a failed turn with the code `run_cancelled`)."""
    return result.error is not None and result.error.code == ProblemCode.RUN_CANCELLED


def response_body(result: TurnResult) -> TurnResponseBody:
    """The `response` of a run's body: text, messages, usage, structured answer."""
    return TurnResponseBody(
        text=result.text,
        messages=result.messages,
        usage=result.usage,
        structured=result.structured,
    )


@dataclass(frozen=True)
class Succeeded:
    """A turn that succeeded: its body and headers (`POST .../run`'s 200; the body is the
    streams' `run.completed` data)."""

    body: RunResultBody
    headers: dict[str, str]


@dataclass(frozen=True)
class Failed:
    """A turn that failed (or was cancelled): the problem the API answers it with, which carries
    the run's ids in its headers (`POST .../run`'s problem response; the streams' `run.failed`
    or `run.cancelled` data)."""

    problem: ProblemError


RunAnswer = Succeeded | Failed
"""A finished run's answer."""


class Answers:
    """Renders runs for the API whose settings (public origin, session limit) it is given."""

    def __init__(self, settings: ApiSettings) -> None:
        self.settings = settings

    def run_location(self, agent: str, session_id: str, correlation_id: str) -> str:
        """The public URL of a run resource."""
        return self.settings.url(f"agents/{agent}/sessions/{session_id}/runs/{correlation_id}")

    def answer(
        self, agent: str, session_id: str, result: TurnResult, approvals: Sequence[Approval] = ()
    ) -> func.HttpResponse:
        """The answer to a finished run: 200 with its body, or the problem it failed with."""
        match self.run_answer(agent, session_id, result, approvals):
            case Succeeded(body=body, headers=headers):
                return json_response(body, 200, headers)
            case Failed(problem=problem):
                return problem_response(problem)

    def run_answer(
        self, agent: str, session_id: str, result: TurnResult, approvals: Sequence[Approval] = ()
    ) -> RunAnswer:
        """A finished run's answer, as a value: its body and headers, or the problem it failed with."""
        location = self.run_location(agent, session_id, result.correlation_id)
        headers = {
            SESSION_HEADER: session_id,
            CORRELATION_HEADER: result.correlation_id,
            "Location": location,
        }
        error = result.error
        context = {"agent": agent, "session_id": session_id, "correlation_id": result.correlation_id}
        if error is not None and error.code in _HOST_FAILURES:
            return Failed(
                ProblemError(
                    ProblemCode(error.code),
                    f"session {session_id!r} of agent {agent!r}: {error.message}",
                    headers=headers,
                    retryable=error.retryable,
                    max_session_bytes=self.settings.max_session_bytes,
                    location=location,
                    **context,
                )
            )
        if error is not None:
            # The turn's failure is stored in the history too; the client gets the model's code.
            return Failed(ProblemError.model_failure(error, headers=headers, location=location, **context))
        body = RunResultBody(
            agent=agent,
            session_id=session_id,
            correlation_id=result.correlation_id,
            status="succeeded",
            response=response_body(result),
            location=location,
            approvals=_approvals_body(approvals),
        )
        return Succeeded(body, headers)

    def accepted(
        self, agent: str, session_id: str, correlation_id: str, awaiting: RunApprovals | None = None
    ) -> func.HttpResponse:
        """202: the run is queued, running, or waiting for decisions (`awaiting`); poll its location."""
        location = self.run_location(agent, session_id, correlation_id)
        body = _pending(agent, session_id, correlation_id, location, awaiting)
        headers = {
            "Location": location,
            "Retry-After": "1",
            SESSION_HEADER: session_id,
            CORRELATION_HEADER: correlation_id,
        }
        return json_response(body, 202, headers)

    def status(
        self,
        agent: str,
        session_id: str,
        correlation_id: str,
        result: TurnResult | None,
        awaiting: RunApprovals | None = None,
        approvals: Sequence[Approval] = (),
    ) -> func.HttpResponse:
        """The run resource: 200 with the run's status (pending, awaiting_approval, succeeded,
        failed or cancelled); a finished run with the `approvals` it kept."""
        location = self.run_location(agent, session_id, correlation_id)
        headers = {SESSION_HEADER: session_id, CORRELATION_HEADER: correlation_id}
        if result is None:
            body = _pending(agent, session_id, correlation_id, location, awaiting)
            return json_response(body, 200, {**headers, "Retry-After": "1"})
        error = result.error
        body = RunResultBody(
            agent=agent,
            session_id=session_id,
            correlation_id=correlation_id,
            status="cancelled" if is_cancelled(result) else "failed" if error else "succeeded",
            response=response_body(result),
            error=None if error is None else ErrorBody.model_validate(error.model_dump(mode="json")),
            location=location,
            approvals=_approvals_body(approvals),
        )
        return json_response(body, 200, headers)


def _pending(
    agent: str, session_id: str, correlation_id: str, location: str, awaiting: RunApprovals | None
) -> RunResultBody:
    """The body of a run that has no outcome yet (202 on submit, 200 on the run resource)."""
    return RunResultBody(
        agent=agent,
        session_id=session_id,
        correlation_id=correlation_id,
        status="awaiting_approval" if awaiting is not None and awaiting.waiting else "pending",
        location=location,
        approvals=None if awaiting is None else [approval_body(a) for a in awaiting.approvals],
    )


def approval_body(approval: Approval) -> ApprovalBody:
    """One approval as the API shows it (the same shape its `approval.required` event carries)."""
    return ApprovalBody.model_validate(approval.public_json())


def _approvals_body(approvals: Sequence[Approval]) -> list[ApprovalBody] | None:
    """A finished run's approvals as its body lists them; null for a run that never paused."""
    return [approval_body(a) for a in approvals] or None
