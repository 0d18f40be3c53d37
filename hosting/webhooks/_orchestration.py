"""The delivery of one run's webhook (`dafx_webhook`, instance `dafx-webhook-{agent}-{session}-{run}`).

Started by the run route before it sends the turn, so the webhook is stored (the start is a
message of the task hub) before the run can end, and a crash after it loses nothing. It waits
for the run's end on durable timers, reading the entity's `run_status` (a read: every `Pace.poll`
seconds at first, doubling up to a minute), then tries the delivery activity until it is
delivered, fails for good, or `Pace.attempts` are spent, sleeping `first_retry * 2**(n-1)`
seconds (at most `max_retry`) on a durable timer between attempts.

The retries are the orchestration's own rather than `call_activity_with_retry`: a retry policy
retries every failure, and here a final answer (a 4xx, a redirect) must end the delivery, and
each attempt's outcome must be recorded where the run's reader sees it (the custom status, then
the output). The delivery id is drawn from the instance id, so every attempt, and a replay, sends
the same one. At least once: a lost activity is run again by the host, and a receiver that got
the POST but whose answer was lost gets it again (it deduplicates by the id).
"""

from __future__ import annotations

import uuid
from collections.abc import Generator
from datetime import timedelta
from typing import Any

import azure.durable_functions as df

from .._ids import entity_name
from ._settings import Pace
from ._spec import Webhook

WEBHOOK = "dafx_webhook"
"""Orchestration: wait for a run's end, then deliver its webhook."""
DELIVER = "dafx_webhook_deliver"
"""Activity: one delivery attempt (hosting.webhooks._deliver)."""

UNFINISHED = frozenset({"pending", "running", "awaiting_approval"})
NEVER_SEEN_POLLS = 20
"""Reads of a run never seen before the delivery gives up (the turn was refused or never sent)."""
LAST_POLL_SECONDS = 60.0


def webhook_instance(agent: str, session_id: str, correlation_id: str) -> str:
    """The instance id of a run's delivery (one per run: a retried request starts it once)."""
    return f"dafx-webhook-{agent}-{session_id}-{correlation_id}"


def delivery_id(instance: str) -> str:
    """The delivery id receivers deduplicate by: the same for every attempt of one run's delivery."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, instance))


def record(
    spec: dict[str, Any], status: str, attempts: int, last: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What the run resource shows as `webhook`."""
    shown: dict[str, Any] = {
        "url": spec["webhook"]["url"],
        "status": status,
        "attempts": attempts,
        "delivery_id": spec["deliveryId"],
    }
    if last is not None:
        shown["last_status_code"] = last.get("status")
        if last.get("error"):
            shown["last_error"] = last["error"]
    return shown


def webhook_orchestrator(context: df.DurableOrchestrationContext) -> Generator[Any, Any, dict[str, Any]]:
    spec = context.get_input()
    pace = Pace.from_json(spec["pace"])
    context.set_custom_status(record(spec, "waiting", 0))
    ended = yield from _wait_for_end(context, spec, pace)
    if not ended:
        done = record(spec, "no_run", 0)
        context.set_custom_status(done)
        return done
    last: dict[str, Any] | None = None
    for attempt in range(1, pace.attempts + 1):
        context.set_custom_status(record(spec, "delivering", attempt - 1, last))
        try:
            last = yield context.call_activity(DELIVER, {**spec, "attempt": attempt, "timeout": pace.timeout})
        except Exception as error:  # the activity itself failed (a bug, a worker lost): try again
            last = {"outcome": "retry", "status": None, "error": f"the attempt failed: {error}"[:300]}
        outcome = last.get("outcome") if isinstance(last, dict) else "retry"
        if outcome in ("delivered", "failed"):
            done = record(spec, outcome, attempt, last)
            context.set_custom_status(done)
            return done
        if attempt < pace.attempts:
            wait = min(pace.first_retry * 2 ** (attempt - 1), pace.max_retry)
            yield context.create_timer(context.current_utc_datetime + timedelta(seconds=wait))
    done = record(spec, "failed", pace.attempts, last)
    context.set_custom_status(done)
    return done


def _wait_for_end(
    context: df.DurableOrchestrationContext, spec: dict[str, Any], pace: Pace
) -> Generator[Any, Any, bool]:
    """Sleep and read the run's status until it has ended (True), or it never appears (False)."""
    entity = df.EntityId(entity_name(spec["agent"]), spec["session"])
    interval, seen, misses = pace.poll, False, 0
    while True:
        yield context.create_timer(context.current_utc_datetime + timedelta(seconds=interval))
        answer = yield context.call_entity(entity, "run_status", {"correlationId": spec["correlation"]})
        if isinstance(answer, dict) and answer.get("status") in UNFINISHED:
            seen = True
        elif answer is not None or seen:
            return True  # a result, or discarded (a reset, delete or expiry) after it was seen
        else:
            misses += 1
            if misses >= NEVER_SEEN_POLLS:
                return False
        interval = min(interval * 2, LAST_POLL_SECONDS)


def delivery_spec(
    agent: str, session_id: str, correlation_id: str, user_id: str | None, webhook: Webhook, pace: Pace
) -> tuple[str, dict[str, Any]]:
    """The instance id and input of a run's delivery."""
    instance = webhook_instance(agent, session_id, correlation_id)
    spec = {
        "agent": agent, "session": session_id, "correlation": correlation_id, "user": user_id,
        "webhook": webhook.to_json(), "deliveryId": delivery_id(instance), "pace": pace.to_json(),
    }
    return instance, spec
