"""The worked example: a writer drafts, a reviewer critiques until it approves, a human signs off.

Orchestration `review_workflow`: the writer agent drafts a piece on the topic; the reviewer
agent answers with structured output `{approved, feedback}`; while it does not approve (and at
most `max_rounds` times) the writer revises; then the orchestration waits for a human's
`approval` event, or gives up after `approval_timeout_seconds`. Every custom status and the
output carry the `topic`, so a status read (and the console) shows what the piece is about.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Generator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pydantic import ValidationError

from agents import TurnResult
from hosting import AgentRunFailed, get_agent

from ._review import REVIEW_SCHEMA, Review

WORKFLOW_NAME = "review_workflow"
"""Name of the orchestrator function."""
APPROVAL_EVENT = "approval"
"""Name of the external event a human's decision is sent as."""
INSTANCE_PREFIX = "review-"
"""Every review instance id starts with it, so the list queries by prefix (examples.review._api)."""


def new_instance_id() -> str:
    """A new review instance id: `review-` and a random UUID."""
    return f"{INSTANCE_PREFIX}{uuid.uuid4().hex}"


@dataclass(frozen=True)
class ReviewWorkflow:
    """Which agents play writer and reviewer."""

    writer: str = "writer"
    reviewer: str = "reviewer"


def _verdict(review: TurnResult) -> dict[str, Any]:
    # The turn already checked the answer against REVIEW_SCHEMA; `structured` is the checked value.
    try:
        verdict = Review.model_validate(review.structured)
    except ValidationError:
        return {"approved": False, "feedback": review.text}
    return {"approved": verdict.approved, "feedback": verdict.feedback}


def make_orchestrator(workflow: ReviewWorkflow) -> Any:
    """The orchestrator function of the review workflow."""

    def review_workflow(context: Any) -> Generator[Any, Any, dict[str, Any]]:
        params = context.get_input() or {}
        topic = str(params.get("topic", ""))
        max_rounds = int(params.get("max_rounds", 3))
        timeout = int(params.get("approval_timeout_seconds", 86_400))
        writer = get_agent(context, workflow.writer)
        reviewer = get_agent(context, workflow.reviewer)
        writer_session = f"{context.instance_id}-writer"
        reviewer_session = f"{context.instance_id}-reviewer"
        reviews: list[dict[str, Any]] = []
        draft = ""
        try:
            context.set_custom_status({"stage": "drafting", "topic": topic, "round": 1})
            result = yield from writer.run(f"Write a short piece about: {topic}", session_id=writer_session)
            draft = result.text
            for round_ in range(1, max_rounds + 1):
                context.set_custom_status(
                    {"stage": "reviewing", "topic": topic, "round": round_, "draft": draft}
                )
                review = yield from reviewer.run(
                    f"Review this draft about {topic!r}. Approve it only if it is ready.\n\n{draft}",
                    session_id=reviewer_session,
                    response_format=REVIEW_SCHEMA,
                )
                verdict = _verdict(review)
                reviews.append({"round": round_, **verdict})
                if verdict["approved"] or round_ == max_rounds:
                    break
                context.set_custom_status(
                    {"stage": "revising", "topic": topic, "round": round_ + 1, "draft": draft}
                )
                result = yield from writer.run(
                    # The topic again: a writer that forgets earlier turns (or the offline model,
                    # which answers the last message only) must not lose what the piece is about.
                    f"Revise your draft about {topic!r} using this feedback:\n\n{verdict['feedback']}",
                    session_id=writer_session,
                )
                draft = result.text
        except AgentRunFailed as failure:
            return {
                "status": "failed",
                "topic": topic,
                "draft": draft,
                "reviews": reviews,
                "error": {"agent": failure.agent, "code": failure.code, "message": failure.message},
            }
        reviewer_approved = bool(reviews and reviews[-1]["approved"])
        context.set_custom_status(
            {
                "stage": "awaiting_approval",
                "topic": topic,
                "draft": draft,
                "reviewer_approved": reviewer_approved,
            }
        )
        deadline = context.current_utc_datetime + timedelta(seconds=timeout)
        timer = context.create_timer(deadline)
        approval = context.wait_for_external_event(APPROVAL_EVENT)
        winner = yield context.task_any([approval, timer])
        outcome: dict[str, Any] = {
            "topic": topic,
            "draft": draft,
            "reviews": reviews,
            "reviewer_approved": reviewer_approved,
        }
        if winner == approval:
            timer.cancel()
            decision = approval.result
            if isinstance(decision, str):
                try:
                    decision = json.loads(decision)
                except ValueError:
                    decision = {}
            decision = decision if isinstance(decision, dict) else {}
            approved = decision.get("approved") is True
            outcome.update(status="approved" if approved else "rejected", comment=decision.get("comment"))
        else:
            outcome.update(status="timed_out")
        context.set_custom_status({"stage": "done", "topic": topic, "status": outcome["status"]})
        return outcome

    return review_workflow
