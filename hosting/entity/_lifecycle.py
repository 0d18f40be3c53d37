"""Entity operations of a session's lifecycle: `reset`, `delete`, which archive they leave
behind (`archive_epoch`), and idle expiry (`expire`), decided by the entity itself so it can
never race a turn: operations of one entity run one at a time, so a turn is either before the
check (and the session is not idle) or after it (and runs on a fresh session).

These operations set their answer themselves: one that leaves no entity calls
`destruct_on_exit` after `set_result`, which would mark the entity as existing again."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from agents import ended_session, now_iso, wants_session_end
from state import AgentState, StateError, archive_info

from ..lifecycle import ERASE_DELETE_KEY, approval_timeout, approvals_due, due_at, ttl_for
from ..stored import StoredDocument, UnreadableTurn, active_turn, reset_text, tombstone_text
from ._context import EntityContext, cache_load, load, operation_input, store_text, stored_text
from ._services import EntityServices
from ._wire import ApprovalExpiry, ArchiveEpoch, Epoch, Expired, NotExpired

log = logging.getLogger("hosting.entity")


def archive_epoch(context: EntityContext) -> str | None:
    """The epoch of the session's archive (None: nothing archived, no state, or unreadable)."""
    try:
        loaded = load(context)
    except StateError:
        return None
    info = archive_info(loaded.state)
    return None if info is None else info.epoch


def answer_archive_epoch(services: EntityServices, context: EntityContext) -> None:
    """The `archive_epoch` operation: answer `{"readable", "epoch"}`, the session's archive epoch
    now (None: nothing archived, or no session). An unreadable state is `readable: false`: its
    archive may still be referenced."""
    answer: ArchiveEpoch
    if stored_text(context) is None:
        answer = {"readable": True, "epoch": None}
        context.set_result(answer)
        context.destruct_on_exit()  # asking must not create the session
        return
    try:
        loaded = load(context)
    except StateError:
        answer = {"readable": False, "epoch": None}
        context.set_result(answer)
        return
    info = archive_info(loaded.state)
    answer = {"readable": True, "epoch": None if info is None else info.epoch}
    context.set_result(answer)


def reset(services: EntityServices, context: EntityContext) -> None:
    """The `reset` operation: an empty history that remembers the ids of the runs it discards
    (hosting.stored); the answer names the archive left behind (deleted after this commits)."""
    epoch = archive_epoch(context)
    # Load first: a history we cannot read is never replaced, not even by an empty one.
    old = None
    if stored_text(context) is not None:
        old = StoredDocument.of_state(load(context).state)
    fresh = AgentState.new()
    fresh.last_activity_at = now_iso()
    store_text(context, reset_text(old, fresh))
    cache_load(context, None)
    answer: Epoch = {"epoch": epoch}
    context.set_result(answer)


def _stored_document(context: EntityContext) -> StoredDocument | None:
    """The stored document (None: no state), from the loaded state when this build can read it,
    else the stored JSON as it is (a delete still remembers the run ids of a newer writer)."""
    text = stored_text(context)
    if text is None:
        return None
    try:
        return StoredDocument.of_state(load(context).state)
    except StateError:
        return StoredDocument.parse(text)


def delete(services: EntityServices, context: EntityContext) -> None:
    """The `delete` operation: answer `{"epoch"}` of the archive left behind, and leave a
    tombstone of the discarded run ids (hosting.stored), or nothing when there is nothing to
    remember. Its input `{"erase": true}`: a user's erasure, whose tombstone names no user."""
    spec = operation_input(context)
    erase = isinstance(spec, dict) and spec.get(ERASE_DELETE_KEY) is True
    answer: Epoch = {"epoch": archive_epoch(context)}
    context.set_result(answer)
    tombstone = tombstone_text(_stored_document(context), now_iso(), erase=erase)
    cache_load(context, None)
    if tombstone is None:
        # destruct_on_exit after set_result: set_result would mark the entity as existing.
        context.destruct_on_exit()
        return
    store_text(context, tombstone)


def expire(services: EntityServices, context: EntityContext) -> None:
    """The `expire` operation: delete the session when it has been idle for its agent's TTL;
    answer what happened: `{"expired": true, "epoch"}` or `{"expired": false, "dueAt": RFC 3339 |
    null}`. For an agent with session-end hooks an expired answer also holds `"ended"`, the
    session as the hooks get it (`agents.ended_session`): its state is gone after this."""
    kept: NotExpired
    if stored_text(context) is None:
        kept = {"expired": False, "dueAt": None}
        context.set_result(kept)
        context.destruct_on_exit()  # asking must not create the session
        return
    try:
        loaded = load(context)
    except StateError:
        # An unreadable state is kept as it is, forever; the watcher stops.
        kept = {"expired": False, "dueAt": None}
        context.set_result(kept)
        return
    agent = services.agent.name
    due = due_at(loaded.state.to_document(), ttl_for(agent))
    paused = _paused_approvals(loaded.state)
    if paused is not None:
        # A person is to decide; the approval's own expiry resumes the turn, and the idle clock
        # starts again from there. The check answers when that expiry is due, so that it runs
        # even for a run nobody has read since it paused (whoever reads it starts the expiry).
        kept = {"expired": False, "dueAt": None, "approvals": paused}
        context.set_result(kept)
        return
    if due is None or due > datetime.now(UTC):
        kept = {"expired": False, "dueAt": None if due is None else due.isoformat()}
        context.set_result(kept)
        return
    info = archive_info(loaded.state)
    log.info("entity %s@%s expired (idle since %s)", services.name, context.entity_key, due)
    epoch = None if info is None else info.epoch
    answer: Expired = {"expired": True, "epoch": epoch}
    if wants_session_end(services.agent.context_providers):
        answer["ended"] = ended_session(
            agent, str(context.entity_key), "expiry", loaded.state, epoch, now_iso()
        )
    context.set_result(answer)
    context.destruct_on_exit()
    cache_load(context, None)


def _paused_approvals(state: AgentState) -> ApprovalExpiry | None:
    """The paused step's expiry (`{correlationId, step, seconds, dueAt}`, as
    `expire_approvals` takes it), or None for a session that waits on no decision."""
    try:
        turn = active_turn(state)
    except UnreadableTurn:
        return None
    if turn is None or not turn.waiting:
        return None
    seconds = approval_timeout()
    # An unreadable request time counts from now: the step still gets its whole approval time.
    due = approvals_due(turn.waiting, seconds) or datetime.now(UTC) + timedelta(seconds=seconds)
    return {
        "correlationId": turn.correlation_id,
        "step": turn.progress.steps,
        "seconds": seconds,
        "dueAt": due.isoformat(),
    }
