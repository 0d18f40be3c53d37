"""SQLite storage of entity messages and states (the durable queue).

Every method runs on the store's single database thread (see ``EntityStore.run``), so the
event loop never blocks on a lock held by another connection to the same file.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import pathlib
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .._sqlite import open_database

T = TypeVar("T")
RESULT_RETENTION_SECONDS = 30 * 24 * 3600

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entity_messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    entity_id TEXT NOT NULL,
    operation TEXT NOT NULL,
    input TEXT,
    request_id TEXT,
    is_signal INTEGER NOT NULL,
    parent TEXT,
    due_at REAL NOT NULL,
    enqueued_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS entity_messages_by_entity ON entity_messages (entity_id, seq);
CREATE TABLE IF NOT EXISTS entity_states (
    entity_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    key TEXT NOT NULL,
    state TEXT,
    last_operation_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS entity_results (
    request_id TEXT PRIMARY KEY,
    entity_id TEXT NOT NULL,
    is_error INTEGER NOT NULL,
    result TEXT,
    completed_at REAL NOT NULL
);
"""


@dataclass(frozen=True)
class Message:
    """One queued entity operation."""

    seq: int
    entity_id: str
    operation: str
    input: str | None  # the wire text handed to the entity as the batch item's "input"
    request_id: str | None
    is_signal: bool
    parent: str | None
    due_at: float


@dataclass(frozen=True)
class NewMessage:
    """An operation to enqueue."""

    entity_id: str
    operation: str
    input: str | None
    request_id: str | None = None
    is_signal: bool = True
    parent: str | None = None
    due_at: float | None = None


@dataclass(frozen=True)
class StoredResult:
    """The committed result of a called operation."""

    request_id: str
    is_error: bool
    result: str | None


def _insert_message(conn: sqlite3.Connection, m: NewMessage, is_signal: bool, now: float) -> int:
    """Insert one message (inside the caller's transaction); returns its sequence number."""
    cur = conn.execute(
        "INSERT INTO entity_messages (entity_id, operation, input, request_id, is_signal,"
        " parent, due_at, enqueued_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (m.entity_id, m.operation, m.input, m.request_id, int(is_signal), m.parent,
         m.due_at if m.due_at is not None else now, now),
    )
    return int(cur.lastrowid or 0)


class EntityStore:
    """The entity tables in the host's SQLite file."""

    def __init__(self, db_path: pathlib.Path) -> None:
        self._path = db_path
        self._conn: sqlite3.Connection | None = None
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="devhost-db")

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the database thread."""
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)

    def open(self) -> None:
        """Open (and create) the database; call through ``run``."""
        conn = open_database(self._path, _SCHEMA)
        # Results only serve callers re-asking after a restart; a month covers any dev session.
        conn.execute("DELETE FROM entity_results WHERE completed_at < ?",
                     (time.time() - RESULT_RETENTION_SECONDS,))
        self._conn = conn

    def close(self) -> None:
        """Close the connection; call through ``run``."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def shutdown(self) -> None:
        """Stop the database thread (after ``close``)."""
        self._thread.shutdown(wait=True)

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("entity store is not open")
        return self._conn

    def enqueue(self, messages: Sequence[NewMessage]) -> list[int]:
        """Insert and commit messages; returns their sequence numbers."""
        now = time.time()
        conn = self.conn
        seqs = []
        conn.execute("BEGIN IMMEDIATE")
        try:
            for m in messages:
                seqs.append(_insert_message(conn, m, m.is_signal, now))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return seqs

    def fetch_due(self, entity_id: str, now: float, limit: int) -> list[Message]:
        """The oldest due messages of one entity, in arrival order."""
        rows = self.conn.execute(
            "SELECT seq, entity_id, operation, input, request_id, is_signal, parent, due_at"
            " FROM entity_messages WHERE entity_id = ? AND due_at <= ? ORDER BY seq LIMIT ?",
            (entity_id, now, limit),
        ).fetchall()
        return [Message(r[0], r[1], r[2], r[3], r[4], bool(r[5]), r[6], r[7]) for r in rows]

    def next_batch(
        self, entity_id: str, now: float, limit: int, *, with_state: bool = False
    ) -> tuple[str | None, list[Message], float | None]:
        """What an entity's worker reads before each batch, in one trip to the database thread:
        the committed state (``with_state``, else None), the due messages (``fetch_due``) and,
        when none is due, the earliest later due time (``next_due``)."""
        state = self.load_state(entity_id) if with_state else None
        messages = self.fetch_due(entity_id, now, limit)
        return state, messages, (self.next_due(entity_id) if not messages else None)

    def pending_entities(self) -> list[tuple[str, float]]:
        """Every entity with queued messages and its earliest due time, oldest first."""
        rows = self.conn.execute(
            "SELECT entity_id, MIN(due_at), MIN(seq) FROM entity_messages GROUP BY entity_id ORDER BY 3"
        ).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def next_due(self, entity_id: str) -> float | None:
        row = self.conn.execute(
            "SELECT MIN(due_at) FROM entity_messages WHERE entity_id = ?", (entity_id,)
        ).fetchone()
        return None if row is None or row[0] is None else float(row[0])

    def load_state(self, entity_id: str) -> str | None:
        """The committed state text, or None when the entity does not exist."""
        row = self.conn.execute(
            "SELECT state FROM entity_states WHERE entity_id = ?", (entity_id,)
        ).fetchone()
        return None if row is None else str(row[0])

    def get_result(self, request_id: str) -> StoredResult | None:
        row = self.conn.execute(
            "SELECT is_error, result FROM entity_results WHERE request_id = ?", (request_id,)
        ).fetchone()
        return None if row is None else StoredResult(request_id, bool(row[0]), row[1])

    def lookup_request(self, request_id: str) -> tuple[StoredResult | None, bool]:
        """(committed result, still queued) of a called operation, read in one go.

        Commits run on this same thread, so the answer cannot straddle a commit.
        """
        result = self.get_result(request_id)
        row = self.conn.execute(
            "SELECT 1 FROM entity_messages WHERE request_id = ? LIMIT 1", (request_id,)
        ).fetchone()
        return result, row is not None

    def commit_turn(
        self,
        entity_id: str,
        name: str,
        key: str,
        state: str | None,
        state_changed: bool,
        consumed: Sequence[int],
        results: Sequence[StoredResult],
        emitted: Sequence[NewMessage],
    ) -> list[int]:
        """Atomically: new state, consumed messages removed, results and emitted signals stored."""
        now = time.time()
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            if state_changed:
                if state is None:
                    conn.execute("DELETE FROM entity_states WHERE entity_id = ?", (entity_id,))
                else:
                    conn.execute(
                        "INSERT INTO entity_states (entity_id, name, key, state, last_operation_at)"
                        " VALUES (?, ?, ?, ?, ?) ON CONFLICT(entity_id) DO UPDATE SET"
                        " state = excluded.state, last_operation_at = excluded.last_operation_at",
                        (entity_id, name, key, state, now),
                    )
            else:
                # Any operation is activity, as the Durable extension counts it (the entity query's
                # lastOperationTime, which idle expiry reads), not only one that changed the state.
                conn.execute(
                    "UPDATE entity_states SET last_operation_at = ? WHERE entity_id = ?", (now, entity_id)
                )
            conn.executemany("DELETE FROM entity_messages WHERE seq = ?", [(s,) for s in consumed])
            conn.executemany(
                "INSERT OR REPLACE INTO entity_results (request_id, entity_id, is_error, result,"
                " completed_at) VALUES (?, ?, ?, ?, ?)",
                [(r.request_id, entity_id, int(r.is_error), r.result, now) for r in results],
            )
            seqs = []
            for m in emitted:
                # An entity can only signal other entities, so all it emits is stored as a signal.
                seqs.append(_insert_message(conn, m, True, now))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return seqs

    def list_entities(
        self, name: str | None, fetch_state: bool, limit: int, after: tuple[str, str] | None = None,
        operated: tuple[float | None, float | None] = (None, None),
    ) -> list[tuple[str, str, float, str | None]]:
        """(name, key, last operation time, state or None) of existing entities, in (name, key)
        order, starting after the entity ``after`` (a page's continuation); ``operated`` bounds
        the last operation time (epoch seconds, inclusive; None: open)."""
        sql = "SELECT name, key, last_operation_at, {} FROM entity_states".format(
            "state" if fetch_state else "NULL"
        )
        args: list[Any] = []
        where: list[str] = []
        if name:
            where.append("name = ?")
            args.append(name.lower())
        if after is not None:
            where.append("(name, key) > (?, ?)")
            args.extend(after)
        for bound, test in zip(operated, ("last_operation_at >= ?", "last_operation_at <= ?"), strict=True):
            if bound is not None:
                where.append(test)
                args.append(bound)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY name, key LIMIT ?"
        args.append(limit)
        return [(r[0], r[1], float(r[2]), r[3]) for r in self.conn.execute(sql, args).fetchall()]
