"""The providers' session-end hooks (`ContextProvider.on_session_ended`), run durably.

* `dafx_session_ended` (`dafx-ended-{agent}-{session}-{key}`): started by the reset and delete
  routes right after they signal the entity, with the ended session as they read it
  (`agents.ended_session`: its id, user, key and conversation), because the entity's state is
  gone once the change is committed. It first calls the entity (`archive_epoch`, a read), so the
  hooks run behind the reset or delete queued there, then calls the hooks' activity. The caller
  gets its 202 without waiting for any of it.
* Idle expiry: the entity's `expire` answers the ended session along with `expired`, and the
  expiry orchestration (hosting.lifecycle._expiry) calls the same activity.
* `dafx_session_end_hooks` (activity, with a durable client): `agents.run_session_ended` with
  the hosted agent's providers and model, and the erasure check (`erasure_began`).

An erasure of the user (hosting.lifecycle._erasure) deletes their sessions and then their memory,
but it cannot see a hook still to run for a session that ended before it: its summary, written
afterwards, would bring back what was erased. So every ended session carries when it ended
(`endedAt`), and a hook is told the user's data was erased (`SessionEnd.erased`) when the user's
erasure record (`dafx-erase-{user}`, the receipt the erasure routes read) was created at or after
that time less `ERASURE_MARGIN`: then no hook runs, and a hook that stored something checks again
after storing it and takes it back (the erasure may have listed the memory before the write).

At least once: an orchestration started by a client runs to its end (its start and every step
are messages of the task hub, replayed from its history after a crash), and the activity is
called with retries (`call_activity_with_retry`: a failed or lost activity is scheduled again),
so a hook may run more than once for one end, never zero times while retries remain; hooks are
idempotent by `SessionEnd.key` (docs/hosting.md "Session-end hooks").
"""

from __future__ import annotations

import json
import logging
from collections.abc import Generator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import azure.durable_functions as df

from agents import EndReason, ended_session, run_session_ended, wants_session_end
from state import StateError, load_state

from .._ids import entity_name
from ..client import DurableClient, query_instances
from ._names import erasure_instance

log = logging.getLogger("hosting.lifecycle")

ENDED = "dafx_session_ended"
"""Orchestration: the session-end hooks of a reset or deleted session."""
ENDED_HOOKS = "dafx_session_end_hooks"
"""Activity: call the agent's providers' `on_session_ended` with one ended session."""

HOOK_RETRY = df.RetryOptions(first_retry_interval_in_milliseconds=5_000, max_number_of_attempts=6)
"""A failed hook (model or store unavailable) is tried again 5 s, 10 s, ... later, 6 times in all."""


ERASURE_MARGIN = timedelta(minutes=2)
"""An erasure that began up to this long before a session ended counts as after it: the two
times come from different machines' clocks (the route's or entity's, and the erasure's start),
so the check errs towards keeping nothing. A session ending within two minutes of its user's
erasure is therefore not summarised."""


async def erasure_began(client: Any, user: str | None, ended_at: str | None) -> bool:
    """Whether an erasure of `user` began after (or `ERASURE_MARGIN` before) `ended_at`: its
    record exists and was created then. A session of no one: False; an end of unknown time (a
    session-end run an earlier version started): any erasure record counts."""
    if user is None:
        return False
    status = await client.get_status(erasure_instance(user))
    created = getattr(status, "created_time", None)
    if not isinstance(created, datetime):
        return False
    if created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    if not ended_at:
        return True
    return created >= datetime.fromisoformat(ended_at) - ERASURE_MARGIN


def ended_prefix(agent: str) -> str:
    """What the instance ids of `agent`'s session-end orchestrations start with."""
    return f"dafx-ended-{agent}-"


def ended_orchestrator(context: df.DurableOrchestrationContext) -> Generator[Any, Any, int]:
    """Wait behind the reset or delete queued at the entity, then run the hooks."""
    spec = context.get_input()
    yield context.call_entity(df.EntityId(entity_name(spec["agent"]), spec["session"]), "archive_epoch")
    ran = yield context.call_activity_with_retry(ENDED_HOOKS, HOOK_RETRY, spec)
    return int(ran or 0)


async def start_session_ended(
    client: DurableClient,
    agent: Any,
    session_id: str,
    reason: EndReason,
    document: Any,
    epoch: str | None,
    ended_at: str,
) -> bool:
    """After a reset or delete was signalled (`ended_at`: taken before the signal): start the
    session-end hooks with the session as the route read it (`document`); nothing when no
    provider has one, or the session had no turn."""
    if not wants_session_end(agent.context_providers):
        return False
    try:
        state = load_state(json.dumps(document))
    except (StateError, TypeError, ValueError):
        return False  # an unreadable state: the entity refuses it too; nothing to tell
    spec = ended_session(agent.name, session_id, reason, state, epoch, ended_at)
    if spec is None:
        return False
    # One instance per life of the session (its key): two ends that read the same history (two
    # resets sent at once, or a reset and a delete) start it once; the backend refuses a second
    # start while the first is pending or running, and once it has finished, its hooks find
    # their work done (they are idempotent by the key) and call no model again.
    instance = f"{ended_prefix(agent.name)}{session_id}-{spec['key']}"
    try:
        await client.start_new(ENDED, instance, spec)
    except Exception:
        if not await _started(client, instance):
            raise
        log.info("session-end hooks of %s: started already by another end (%s)", session_id, instance)
    return True


async def _started(client: DurableClient, instance: str) -> bool:
    """Whether the instance `instance` exists (so a refused start of it was a duplicate)."""
    try:
        items, _ = await query_instances(client, instance, top=1)
    except Exception:
        return False  # cannot tell: the start's own failure stands
    return any(item.get("instanceId") == instance for item in items)


class EndHooks:
    """The hooks' activity over the app's hosted agents."""

    def __init__(self, agents: Sequence[Any]) -> None:
        self._agents: Mapping[str, Any] = {a.name: a for a in agents}

    async def run(self, spec: dict[str, Any], client: Any) -> int:
        agent = self._agents.get(spec.get("agent", ""))
        if agent is None:
            log.warning("session-end hooks: no agent %r in this app", spec.get("agent"))
            return 0

        async def erased() -> bool:
            return await erasure_began(client, spec.get("user"), spec.get("endedAt"))

        return await run_session_ended(agent.context_providers, agent.model, spec, erased)
