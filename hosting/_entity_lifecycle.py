"""Entity operations of a session's lifecycle: which archive a reset or delete leaves behind, and
idle expiry (`expire`), decided by the entity itself so it can never race a turn: operations
of one entity run one at a time, so a turn is either before the check (and the session is not
idle) or after it (and runs on a fresh session)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from state import StateError, archive_info

from ._deleted import tombstone_text
from ._ttl import due_at, now_iso, ttl_for
from .entity._context import EntityContext, cache_load, store_text, stored_text

if TYPE_CHECKING:
    from ._entity import AgentEntity

log = logging.getLogger("hosting.entity")


def archive_epoch(entity: AgentEntity, context: EntityContext) -> str | None:
    """The epoch of the session's archive (None: nothing archived, no state, or unreadable)."""
    try:
        loaded = entity._load(context)
    except StateError:
        return None
    info = archive_info(loaded.state)
    return None if info is None else info.epoch


def delete(entity: AgentEntity, context: EntityContext) -> None:
    """Delete the session: answer `{"epoch"}` of the archive left behind, and leave a tombstone
    of the discarded run ids (hosting._deleted), or nothing when there is nothing to remember."""
    context.set_result({"epoch": archive_epoch(entity, context)})
    tombstone = tombstone_text(stored_text(context), now_iso())
    cache_load(context, None)
    if tombstone is None:
        # destruct_on_exit after set_result: set_result would mark the entity as existing.
        context.destruct_on_exit()
        return
    store_text(context, tombstone)


def expire(entity: AgentEntity, context: EntityContext) -> None:
    """Delete the session when it has been idle for its agent's TTL; answer what happened:
    `{"expired": true, "epoch"}` or `{"expired": false, "dueAt": RFC 3339 | null}`."""
    if stored_text(context) is None:
        context.set_result({"expired": False, "dueAt": None})
        context.destruct_on_exit()  # asking must not create the session
        return
    try:
        loaded = entity._load(context)
    except StateError:
        # An unreadable state is kept as it is, forever; the watcher stops.
        context.set_result({"expired": False, "dueAt": None})
        return
    due = due_at(loaded.state.to_document(), ttl_for(entity.agent.name))
    if due is None or due > datetime.now(UTC):
        context.set_result({"expired": False, "dueAt": None if due is None else due.isoformat()})
        return
    info = archive_info(loaded.state)
    log.info("entity %s@%s expired (idle since %s)", entity.name, context.entity_key, due)
    context.set_result({"expired": True, "epoch": None if info is None else info.epoch})
    context.destruct_on_exit()
    cache_load(context, None)
