"""Erasing everything kept for one user, durably: `dafx_user_erasure` (instance
`dafx-erase-{user}`, hosting.lifecycle._names).

The orchestration first takes an inventory, then erases what it found, so its receipt counts
what there was, however often a step runs again:

1. per hosted agent, `dafx_erasure_find_sessions` walks the user's sessions (the walk the export
   uses, hosting.client._owned) and answers, per session, its run ids, its archived chunks and its
   stream events (counted before anything is deleted);
2. each session's entity gets `delete` (as an erasure: `{"erase": true}`) twice, a batch at a
   time: the first empties it and leaves a tombstone of its run ids that names no user (no
   `data.userId`: hosting.stored._marks), so those runs answer 410 `run_discarded`, not `pending`;
   the second keeps that tombstone (an erasure replayed after an upgrade sends the same calls);
   then `dafx_erasure_forget_sessions` terminates the sessions' pending approval expiries (which
   would signal them later), and deletes the sessions' chunks (every epoch) and their runs'
   stream events and claims (steer runs' too: their ids live only on the messages they added, in
   the state or in its archived chunks). A signal that still reaches an erased session (an expiry
   that fired first, a waiting orchestration's read) creates nothing: an entity operation that
   stores nothing leaves no entity (hosting.entity._entity);
3. `dafx_erasure_find_memories` lists the ids of the user's memory items (every namespace), and
   `dafx_erasure_forget_memories` deletes them a batch at a time. Memory goes last: a turn of a
   session being erased could still remember something until the session is gone.

Every result is recorded in the orchestration's history (Durable Functions' event sourcing), so a
host killed mid-way replays the finished steps and goes on with the next one; each activity is
idempotent (deleting what is already gone deletes nothing), so one interrupted while running
repeats safely. The orchestration's custom status carries the receipt so far; its output is the
final receipt. The orchestrator is deterministic: its times come from `current_utc_datetime`.

The erasure is of what is stored when each part is walked: a turn the user starts meanwhile makes
a new session that is not erased (erase again after it).
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from typing import Any

import azure.durable_functions as df

from agents.memory import MAX_LIST_LIMIT, MemoryCursor, MemoryStore, memory_store_from_env
from state import HistoryUnavailable

from .._ids import entity_name
from ..archive import HistoryArchive, archived_chunks, default_archive, session_prefix
from ..client import DurableClient, owned_sessions
from ..stored import StoredDocument
from ..streams import StreamKey, StreamStore, StreamStoreUnavailable
from ._approval_expiry import approval_expiries, stop_approval_expiries
from ._names import ERASE_FIND_MEMORIES, ERASE_FIND_SESSIONS, ERASE_MEMORIES, ERASE_SESSION_DATA

log = logging.getLogger("hosting.lifecycle")

ERASE_DELETE_KEY = "erase"
"""In the `delete` operation's input (`{"erase": true}`): the tombstone it leaves names no user."""
DELETE_BATCH = 20
"""Sessions deleted at once (entity calls in parallel), and their data in one activity."""
MEMORY_BATCH = 100
"""Memory items deleted by one activity."""
RETRY = df.RetryOptions(first_retry_interval_in_milliseconds=5_000, max_number_of_attempts=5)
"""An activity that fails (a store briefly unreachable) is tried again, up to 5 times 5 s apart;
after that the erasure fails, its receipt says so, and a new request starts it again."""


def _receipt(user: str, agents: list[str], started: str) -> dict[str, Any]:
    return {
        "user_id": user,
        "status": "running",
        "started_at": started,
        "finished_at": None,
        "memories": 0,
        "sessions": {agent: 0 for agent in agents},
        "archived_chunks": 0,
        "stream_events": 0,
    }


def erasure_orchestrator(context: df.DurableOrchestrationContext) -> Generator[Any, Any, dict[str, Any]]:
    """Erase the user's sessions of every agent, then their memory; answer the receipt."""
    spec = context.get_input()
    user, agents = spec["user"], list(spec["agents"])
    receipt = _receipt(user, agents, context.current_utc_datetime.isoformat())
    context.set_custom_status(receipt)
    for agent in agents:
        find = {"user": user, "agent": agent}
        found = yield context.call_activity_with_retry(ERASE_FIND_SESSIONS, RETRY, find)
        for start in range(0, len(found), DELETE_BATCH):
            batch = found[start : start + DELETE_BATCH]
            entities = [df.EntityId(entity_name(agent), s["session"]) for s in batch]
            # The first delete leaves a tombstone of the runs' ids naming no user, so they still
            # answer 410 `run_discarded`; the second finds that tombstone and keeps it.
            erase = {ERASE_DELETE_KEY: True}
            for _ in range(2):
                yield context.task_all([context.call_entity(e, "delete", erase) for e in entities])
            forget = {"agent": agent, "sessions": batch}
            yield context.call_activity_with_retry(ERASE_SESSION_DATA, RETRY, forget)
            receipt["sessions"][agent] += len(batch)
            receipt["archived_chunks"] += sum(s["chunks"] for s in batch)
            receipt["stream_events"] += sum(s["events"] for s in batch)
            context.set_custom_status(receipt)
    ids = yield context.call_activity_with_retry(ERASE_FIND_MEMORIES, RETRY, {"user": user})
    for start in range(0, len(ids), MEMORY_BATCH):
        batch = ids[start : start + MEMORY_BATCH]
        yield context.call_activity_with_retry(ERASE_MEMORIES, RETRY, {"user": user, "ids": batch})
        receipt["memories"] += len(batch)
        context.set_custom_status(receipt)
    receipt.update(status="completed", finished_at=context.current_utc_datetime.isoformat())
    context.set_custom_status(receipt)
    return receipt


class Eraser:
    """The erasure's activities over the app's stores: the stream store the app was built with,
    the archive and the memory store (opened on first use)."""

    def __init__(
        self, streams: StreamStore, archive: HistoryArchive | None = None, memory: MemoryStore | None = None
    ) -> None:
        self.streams = streams
        self._archive = archive
        self._memory = memory

    def archive(self) -> HistoryArchive:
        if self._archive is None:
            self._archive = default_archive()
        return self._archive

    def memory(self) -> MemoryStore:
        if self._memory is None:
            self._memory = memory_store_from_env()
        return self._memory

    async def find_sessions(self, spec: dict[str, Any], client: DurableClient) -> list[dict[str, Any]]:
        """The user's sessions of one agent: `{session, runs, chunks, events}` each."""
        agent, user = spec["agent"], spec["user"]
        entity = entity_name(agent)
        found: list[dict[str, Any]] = []
        async for owned in owned_sessions(client, agent, user):
            document = owned.document
            known = [*document.run_ids(), *document.discarded_ids, *document.refused_ids]
            archived = await self._archived_steers(entity, owned.session_id, document)
            steered = [*document.steer_ids(), *archived]
            runs = list(dict.fromkeys([*known, *(i for i in steered if isinstance(i, str))]))
            chunks = await self.archive().store.list_paths(session_prefix(entity, owned.session_id))
            events = await self.events(agent, owned.session_id, runs)
            expiries = approval_expiries(agent, owned.session_id, document)
            found.append(
                {
                    "session": owned.session_id, "run_ids": runs, "chunks": len(chunks), "events": events,
                    "expiries": expiries,
                }
            )
        log.info("erasure: %d session(s) of %s found", len(found), agent)
        return found

    async def _archived_steers(self, entity: str, session: str, document: StoredDocument) -> list[Any]:
        """The steer run ids on the archived entries' messages (a steer run's claim names its user
        and outlives a turn archived soon after it). A chunk that cannot be read is deleted all
        the same; its steer runs' claims then expire with the stream retention."""
        ids: list[Any] = []
        try:
            async for chunk in archived_chunks(self.archive(), entity, session, document):
                ids += StoredDocument.steer_marks(chunk.entries)
        except HistoryUnavailable as error:
            log.warning("erasure: the archive of %s@%s is not all readable: %s", entity, session, error)
        return ids

    async def events(self, agent: str, session: str, runs: list[str]) -> int:
        """How many stream events the runs of a session have (a stream's events are numbered from
        1 and expire together, so its last number is its count). An app without a shared stream
        store (`retry_after` None) kept none; a store that is down raises, and the activity is
        tried again."""
        events = 0
        for run in runs:
            try:
                last = await self.streams.last(StreamKey(agent, session, run))
            except StreamStoreUnavailable as error:
                if error.retry_after is None:
                    return 0
                raise
            events += 0 if last is None else last.seq
        return events

    async def stop_expiries(self, spec: dict[str, Any], client: DurableClient) -> None:
        """Stop the approval expiries of deleted sessions: a later one would signal a session
        that is gone (an inventory taken before they were listed has none)."""
        for session in spec["sessions"]:
            await stop_approval_expiries(client, session.get("expiries", []))

    async def forget_sessions(self, spec: dict[str, Any]) -> int:
        """Delete the chunks (every epoch) and the runs' stream events and claims of deleted
        sessions; answer how many sessions."""
        agent = spec["agent"]
        for session in spec["sessions"]:
            await self.archive().forget(entity_name(agent), session["session"])
            # The session's own key last: its latest claimed run (a run id, no user).
            keys = [StreamKey(agent, session["session"], run) for run in session["run_ids"]]
            for key in [*keys, StreamKey.interrupt(agent, session["session"])]:
                await self.streams.discard(key)
                await self.streams.release(key)
        return len(spec["sessions"])

    async def find_memories(self, spec: dict[str, Any]) -> list[str]:
        """The ids of every memory item of the user's, in every namespace."""
        ids: list[str] = []
        after: MemoryCursor | None = None
        while True:
            page = await self.memory().list_user(spec["user"], limit=MAX_LIST_LIMIT, after=after)
            ids += [item.id for item in page.items]
            if page.next is None:
                return ids
            after = page.next

    async def forget_memories(self, spec: dict[str, Any]) -> int:
        """Delete the user's items with these ids (those already gone are skipped)."""
        store, deleted = self.memory(), 0
        for item_id in spec["ids"]:
            item = await store.find(spec["user"], item_id)
            if item is not None and await store.delete(item.namespace, item.id):
                deleted += 1
        return deleted


ACTIVITIES = (ERASE_FIND_SESSIONS, ERASE_SESSION_DATA, ERASE_FIND_MEMORIES, ERASE_MEMORIES)
"""The erasure's activities (registered by hosting.lifecycle._register)."""
