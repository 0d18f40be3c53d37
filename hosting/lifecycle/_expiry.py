"""Durable functions of a session's lifecycle: idle expiry and deleting archived chunks after the
entity change that orphaned them is committed.

* `dafx_session_expiry` (`dafx-expiry-{agent}-{session}`): asks the entity to `expire`; when it
  expired, the chunks go. The agent's sweeper (hosting.lifecycle._sweeper) starts it for a session idle
  for its TTL, as a one-shot check (`once`). Watchers that earlier versions started with each
  session (no `once`) keep their old loop: when the session is not idle yet they sleep on a
  durable timer until it would be due and ask again (`continue_as_new`).
* `dafx_session_cleanup` (`dafx-cleanup-{agent}-{session}-{uuid}`): a reset or delete of a
  session that has archived history: the entity operation is called (its answer names the
  archive it left behind), then the chunks go.

The sweeper purges both kinds of instance once finished (hosting.lifecycle._purge).
* `dafx_forget_history` (activity): deletes one archive epoch's chunks.

Durable timers, entity calls and activities are what the Durable extension offers (and the local
host implements), so expiry works the same on Azure and on `make run`.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from datetime import datetime
from typing import Any

import azure.durable_functions as df

from .._ids import entity_name
from ..archive import default_archive
from ..client._binding import DurableClient
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
        if result.get("epoch"):
            yield context.call_activity(FORGET, {**spec, "epoch": result["epoch"]})
        return "expired"
    due = result.get("dueAt")
    if spec.get("once") or not isinstance(due, str):
        return "not idle" if isinstance(due, str) else "never"
    yield context.create_timer(datetime.fromisoformat(due))
    context.continue_as_new(spec)
    return "waiting"


def cleanup_orchestrator(context: df.DurableOrchestrationContext) -> Generator[Any, Any, str]:
    """Reset or delete a session, then delete the archive it left behind."""
    spec = context.get_input()
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
    client: DurableClient, agent: str, session_id: str, operation: str, archived: bool
) -> None:
    """Queue a reset or delete; with archived history, through `dafx_session_cleanup` so the
    chunks are deleted once the entity change is committed."""
    if archived:
        spec = {"agent": agent, "session": session_id, "operation": operation}
        await client.start_new(CLEANUP, cleanup_instance(agent, session_id), spec)
    else:
        await client.signal_entity(df.EntityId(entity_name(agent), session_id), operation)
