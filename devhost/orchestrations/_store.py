"""SQLite tables of the orchestration engine: instances, history, inbox and outstanding work.

The engine changes them only inside ``transaction()``: an episode's new history, the work it
schedules, the inbox messages it consumed and the instance row are committed together, so a
killed host resumes from the last committed episode and re-issues the work still listed.
All calls happen on the engine's single database thread.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .._sqlite import open_database

_SCHEMA = """
CREATE TABLE IF NOT EXISTS orch_instances (
    instance_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    status TEXT NOT NULL,
    input TEXT,
    output TEXT,
    custom_status TEXT,
    created_time TEXT NOT NULL,
    last_updated_time TEXT NOT NULL,
    parent_instance_id TEXT,
    parent_execution_id TEXT,
    parent_task_id INTEGER,
    next_id INTEGER NOT NULL DEFAULT 0,
    actions_log TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS orch_instances_by_status ON orch_instances (status);
CREATE TABLE IF NOT EXISTS orch_history (
    instance_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (instance_id, seq)
);
CREATE TABLE IF NOT EXISTS orch_inbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    instance_id TEXT NOT NULL,
    execution_id TEXT,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS orch_inbox_by_instance ON orch_inbox (instance_id, id);
CREATE TABLE IF NOT EXISTS orch_work (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    instance_id TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    task_id INTEGER NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS orch_work_by_instance ON orch_work (instance_id);
"""

_INSTANCE_COLUMNS = (
    "instance_id, name, execution_id, status, input, output, custom_status, created_time, "
    "last_updated_time, parent_instance_id, parent_execution_id, parent_task_id, next_id, actions_log"
)


@dataclass
class Instance:
    """One orchestration instance (its current execution)."""

    instance_id: str
    name: str
    execution_id: str
    status: str
    input: str | None
    output: str | None
    custom_status: str | None
    created_time: str
    last_updated_time: str
    parent_instance_id: str | None = None
    parent_execution_id: str | None = None
    parent_task_id: int | None = None
    next_id: int = 0
    # [sequence number, action type, target] of every numbered action, in scheduling order.
    actions_log: list[list[Any]] = field(default_factory=list)

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> Instance:
        values = list(row)
        values[-1] = json.loads(values[-1])
        return cls(*values)

    def to_row(self) -> tuple[Any, ...]:
        return (
            self.instance_id,
            self.name,
            self.execution_id,
            self.status,
            self.input,
            self.output,
            self.custom_status,
            self.created_time,
            self.last_updated_time,
            self.parent_instance_id,
            self.parent_execution_id,
            self.parent_task_id,
            self.next_id,
            json.dumps(self.actions_log),
        )


@dataclass(frozen=True)
class InboxItem:
    """A message for an instance: new history events, a start, or a retried task's attempts."""

    id: int
    instance_id: str
    execution_id: str | None  # None: for whichever execution is current (external events)
    kind: str
    payload: Any


@dataclass(frozen=True)
class WorkItem:
    """Work an episode scheduled and whose completion is not yet in the inbox."""

    id: int
    instance_id: str
    execution_id: str
    task_id: int
    kind: str
    payload: Any


class OrchestrationStore:
    """The engine's own connection to the host's SQLite file."""

    def __init__(self, db_path: pathlib.Path) -> None:
        self._path = db_path
        self._conn: sqlite3.Connection | None = None

    def open(self) -> None:
        conn = open_database(self._path, _SCHEMA)
        self._conn = conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("orchestration store is not open")
        return self._conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error)."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    # -- instances -------------------------------------------------------------------------

    def get(self, instance_id: str) -> Instance | None:
        row = self.conn.execute(
            f"SELECT {_INSTANCE_COLUMNS} FROM orch_instances WHERE instance_id = ?", (instance_id,)
        ).fetchone()
        return Instance.from_row(row) if row else None

    def put(self, instance: Instance) -> None:
        marks = ", ".join("?" * len(instance.to_row()))
        self.conn.execute(
            f"INSERT OR REPLACE INTO orch_instances ({_INSTANCE_COLUMNS}) VALUES ({marks})",
            instance.to_row(),
        )

    def query(self, statuses: list[str] | None, prefix: str | None) -> list[Instance]:
        sql = f"SELECT {_INSTANCE_COLUMNS} FROM orch_instances"
        where: list[str] = []
        args: list[Any] = []
        if statuses:
            where.append(f"status IN ({', '.join('?' * len(statuses))})")
            args.extend(statuses)
        if prefix:
            where.append("substr(instance_id, 1, ?) = ?")
            args.extend([len(prefix), prefix])
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_time"
        return [Instance.from_row(r) for r in self.conn.execute(sql, args)]

    def delete(self, instance_id: str) -> bool:
        cur = self.conn.execute("DELETE FROM orch_instances WHERE instance_id = ?", (instance_id,))
        self.clear_history(instance_id)
        self.conn.execute("DELETE FROM orch_inbox WHERE instance_id = ?", (instance_id,))
        self.conn.execute("DELETE FROM orch_work WHERE instance_id = ?", (instance_id,))
        return cur.rowcount > 0

    # -- history ---------------------------------------------------------------------------

    def history(self, instance_id: str) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT event FROM orch_history WHERE instance_id = ? ORDER BY seq", (instance_id,)
        )
        return [json.loads(r[0]) for r in rows]

    def append_history(self, instance_id: str, start: int, events: list[dict[str, Any]]) -> None:
        self.conn.executemany(
            "INSERT INTO orch_history (instance_id, seq, event) VALUES (?, ?, ?)",
            [(instance_id, start + i, json.dumps(e)) for i, e in enumerate(events)],
        )

    def clear_history(self, instance_id: str) -> None:
        self.conn.execute("DELETE FROM orch_history WHERE instance_id = ?", (instance_id,))

    # -- inbox -----------------------------------------------------------------------------

    def add_inbox(self, instance_id: str, execution_id: str | None, kind: str, payload: Any) -> None:
        self.conn.execute(
            "INSERT INTO orch_inbox (instance_id, execution_id, kind, payload) VALUES (?, ?, ?, ?)",
            (instance_id, execution_id, kind, json.dumps(payload)),
        )

    def inbox(self, instance_id: str) -> list[InboxItem]:
        rows = self.conn.execute(
            "SELECT id, instance_id, execution_id, kind, payload FROM orch_inbox "
            "WHERE instance_id = ? ORDER BY id",
            (instance_id,),
        )
        return [InboxItem(r[0], r[1], r[2], r[3], json.loads(r[4])) for r in rows]

    def remove_inbox(self, ids: list[int]) -> None:
        self.conn.executemany("DELETE FROM orch_inbox WHERE id = ?", [(i,) for i in ids])

    def clear_inbox(self, instance_id: str) -> None:
        self.conn.execute("DELETE FROM orch_inbox WHERE instance_id = ?", (instance_id,))

    def instances_with_inbox(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT DISTINCT instance_id FROM orch_inbox")]

    # -- work ------------------------------------------------------------------------------

    def add_work(self, instance_id: str, execution_id: str, task_id: int, kind: str, payload: Any) -> int:
        cur = self.conn.execute(
            "INSERT INTO orch_work (instance_id, execution_id, task_id, kind, payload) "
            "VALUES (?, ?, ?, ?, ?)",
            (instance_id, execution_id, task_id, kind, json.dumps(payload)),
        )
        return int(cur.lastrowid or 0)

    def all_work(self, instance_id: str | None = None) -> list[WorkItem]:
        sql = "SELECT id, instance_id, execution_id, task_id, kind, payload FROM orch_work"
        args: tuple[Any, ...] = ()
        if instance_id is not None:
            sql += " WHERE instance_id = ?"
            args = (instance_id,)
        rows = self.conn.execute(sql + " ORDER BY id", args)
        return [WorkItem(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows]

    def remove_work(self, work_id: int) -> bool:
        """Delete a work row; False when it is gone (its instance moved on or was purged)."""
        return self.conn.execute("DELETE FROM orch_work WHERE id = ?", (work_id,)).rowcount > 0
