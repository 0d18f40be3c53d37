"""Durable functions of a session's lifecycle: idle expiry and deleting archived chunks after the
entity change that orphaned them is committed.

* `dafx_session_expiry` (`dafx-expiry-{agent}-{session}`): asks the entity to `expire`; when it
  expired, the chunks go. The agent's sweeper (hosting.lifecycle._sweeper) starts it for a session idle
  for its TTL, as a one-shot check (`once`). Watchers that earlier versions started with each
  session (no `once`) keep their old loop: when the session is not idle yet they sleep on a
  durable timer until it would be due and ask again (`continue_as_new`).
* `dafx_session_cleanup` (`dafx-cleanup-{agent}-{session}-{uuid}`): deletes the archive a reset or
  delete of a session left behind. The reset or delete itself is signalled to the entity directly,
  before the caller is answered: an orchestration's messages can be overtaken by a direct signal
  (each hop waits for its control queue's next poll), so a run sent after the 202 could otherwise
  reach the entity first and be wiped. The cleanup asks the entity (`archive_epoch`) until the
  epoch it was given is no longer the session's, i.e. the change is committed, and only then
  deletes that epoch's chunks. Cleanups an earlier version started (input without `epoch`) still
  call the operation themselves.
* `dafx_forget_history` (activity): deletes one archive epoch's chunks.

The sweeper purges the expiry and cleanup instances once finished (hosting.lifecycle._purge).
Durable timers, entity calls and activities are what the Durable extension offers (and the local
host implements), so expiry works the same on Azure and on `make run`.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from datetime import datetime, timedelta
from typing import Any

import azure.durable_functions as df

from .._ids import entity_name
from ..archive import default_archive
from ..client import DurableClient
from ._ended import ENDED_HOOKS, HOOK_RETRY
from ._names import CLEANUP, FORGET, cleanup_instance

log = logging.getLogger("hosting.lifecycle")

def _entity(spec: dict[str, Any]) -> df.EntityId:
    return df.EntityId(entity_name(spec["agent"]), spec["session"])


def expiry_orchestrator(context: df.DurableOrchestrationContext) -> Generator[Any, Any, str]:
    """Expire the session when idle for its TTL; else (a watcher of an earlier version) sleep
    until it would be due."""
    spec = context.get_input()
    check_at = spec.pop("checkAt", None)
    if isinstance(check_at, str):
        # A watcher an earlier version started with its session: it slept until the TTL first.
        yield context.create_timer(datetime.fromisoformat(check_at))
    result = yield context.call_entity(_entity(spec), "expire")
    if not isinstance(result, dict):
        return "unknown"
    if result.get("expired"):
        if isinstance(result.get("ended"), dict):
            # The hooks before the chunks go (they may read the archived history).
            yield context.call_activity_with_retry(ENDED_HOOKS, HOOK_RETRY, result["ended"])
        if result.get("epoch"):
            yield context.call_activity(FORGET, {**spec, "epoch": result["epoch"]})
        return "expired"
    paused = result.get("approvals")
    if isinstance(paused, dict) and isinstance(paused.get("dueAt"), str):
        # The session waits on a person: its run has a terminal answer at the latest when the
        # approvals expire, even if nobody read the run since it paused (docs/hosting.md "Tool
        # approvals"). A step decided meanwhile makes the signal change nothing.
        yield context.create_timer(datetime.fromisoformat(paused["dueAt"]))
        step = {k: paused.get(k) for k in ("correlationId", "step", "seconds")}
        context.signal_entity(_entity(spec), "expire_approvals", step)
        return "approvals expired"
    due = result.get("dueAt")
    if spec.get("once") or not isinstance(due, str):
        return "not idle" if isinstance(due, str) else "never"
    yield context.create_timer(datetime.fromisoformat(due))
    context.continue_as_new(spec)
    return "waiting"


CLEANUP_CHECKS = 8
CLEANUP_CHECK_SECONDS = 15
"""How often, and how far apart, a cleanup asks whether the reset or delete it follows is
committed (2 minutes in all): a direct signal normally arrives before the cleanup's own call; one
not committed by then failed, and its archive is still referenced, so it is kept."""


def cleanup_orchestrator(context: df.DurableOrchestrationContext) -> Generator[Any, Any, str]:
    """Delete the archive epoch a reset or delete left behind, once the entity no longer has it."""
    spec = context.get_input()
    epoch = spec.get("epoch")
    if isinstance(epoch, str):
        for check in range(CLEANUP_CHECKS):
            answer = yield context.call_entity(_entity(spec), "archive_epoch")
            if isinstance(answer, dict) and answer.get("readable") and answer.get("epoch") != epoch:
                yield context.call_activity(FORGET, {**spec, "epoch": epoch})
                return spec["operation"]
            if check + 1 < CLEANUP_CHECKS:
                later = context.current_utc_datetime + timedelta(seconds=CLEANUP_CHECK_SECONDS)
                yield context.create_timer(later)
        log.warning("%s@%s: archive %s is still the session's; kept", spec["agent"], spec["session"], epoch)
        return "kept"
    # A cleanup an earlier version started: it performs the operation itself.
    result = yield context.call_entity(_entity(spec), spec["operation"])
    epoch = result.get("epoch") if isinstance(result, dict) else None
    if epoch:
        yield context.call_activity(FORGET, {**spec, "epoch": epoch})
    return spec["operation"]


async def forget_activity(spec: dict[str, Any]) -> int:
    """Delete the chunks of one archive epoch of a session (after the change was committed)."""
    count = await default_archive().forget(entity_name(spec["agent"]), spec["session"], spec["epoch"])
    log.info("deleted %d archived chunks of %s@%s", count, spec["agent"], spec["session"])
    return count


async def reset_or_delete(
    client: DurableClient, agent: str, session_id: str, operation: str, epoch: str | None
) -> None:
    """Signal a reset or delete to the entity (before the caller gets its 202, so a run sent after
    it queues behind it); with archived history (`epoch`, as the caller read the session), start
    `dafx_session_cleanup` to delete that epoch's chunks once the change is committed."""
    await client.signal_entity(df.EntityId(entity_name(agent), session_id), operation)
    if epoch is not None:
        spec = {"agent": agent, "session": session_id, "operation": operation, "epoch": epoch}
        await client.start_new(CLEANUP, cleanup_instance(agent, session_id), spec)
