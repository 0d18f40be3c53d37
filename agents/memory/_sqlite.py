"""The embedded memory store: one SQLite file, for one machine (`make run`, the local host, tests).

Items live in one table keyed by (user, agent, id); every statement names the namespace, so a
query cannot reach another user's rows. The file is created for its owner alone (0600, in a
folder of theirs: `_settings.private_folder`), as the stream store's. Calls run in a worker thread
so a turn's event loop never waits on the disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._clock import now_iso
from .._sqlite import retry_while_locked
from ._store import (
    DEFAULT_MAX_ITEMS,
    Candidate,
    InvalidMemory,
    MemoryCursor,
    MemoryFull,
    MemoryHit,
    MemoryItem,
    MemoryNamespace,
    MemoryPage,
    checked_embedding,
    checked_limit,
    checked_listing,
    checked_part,
    checked_text,
    matches,
    metadata_json,
    pack_embedding,
    rank,
    unpack_embedding,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    user_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    id TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL,
    source_session TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    embedding BLOB,
    PRIMARY KEY (user_id, agent, id)
) WITHOUT ROWID;
"""
_COLUMNS = "id, text, metadata, source_session, created_at, updated_at, embedding"
_LISTED = "agent, id, text, metadata, source_session, created_at, updated_at, NULL"
_LIST_BATCH = 200  # rows a filtered listing reads at a time


def _agent_key(namespace: MemoryNamespace) -> str:
    # "" stands for "every agent of the user" (agent names are never empty).
    return namespace.agent or ""


class SqliteMemoryStore:
    """`MemoryStore` on a SQLite file (WAL). `max_items`: what one namespace may hold."""

    def __init__(self, path: str | os.PathLike[str], *, max_items: int = DEFAULT_MAX_ITEMS) -> None:
        if max_items < 1:
            raise ValueError("max_items must be positive")
        self.path = Path(path)
        self.max_items = max_items
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))  # its -wal/-shm get this mode
        # Several worker processes import the app at once: the switch to WAL may meet a lock.
        retry_while_locked(self._create)

    def _create(self) -> None:
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        # A connection per call, closed after it (sqlite3's own context manager does not close).
        db = sqlite3.connect(self.path, timeout=10, isolation_level=None)
        try:
            db.execute("PRAGMA synchronous=NORMAL")
            yield db
        finally:
            db.close()

    def _item(self, namespace: MemoryNamespace, row: Sequence[Any]) -> MemoryItem:
        item_id, text, metadata, source, created, updated, blob = row
        return MemoryItem(
            id=item_id,
            namespace=namespace,
            text=text,
            created_at=created,
            updated_at=updated,
            metadata=json.loads(metadata),
            source_session=source,
            embedding=unpack_embedding(blob),
        )

    # -- operations (sync, run in a thread by the async methods) ---------------------------

    def _put(
        self,
        namespace: MemoryNamespace,
        text: str,
        item_id: str | None,
        metadata: Mapping[str, Any] | None,
        source_session: str | None,
        embedding: Sequence[float] | None,
        upsert: bool = False,
    ) -> MemoryItem:
        text = checked_text(text)
        meta = metadata_json(metadata)
        vector = checked_embedding(embedding)
        if source_session is not None:
            checked_part(source_session, "a memory's source session")
        key = (namespace.user_id, _agent_key(namespace))
        stamp = now_iso()
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")  # the count and the write as one step
            try:
                created = stamp
                row = None
                if item_id is not None:
                    checked_part(item_id, "a memory's id")
                    row = db.execute(
                        "SELECT created_at FROM memories WHERE user_id=? AND agent=? AND id=?",
                        (*key, item_id),
                    ).fetchone()
                    if row is None and not upsert:
                        raise InvalidMemory(f"there is no memory {item_id!r} to replace")
                if row is not None:
                    created = row[0]
                else:
                    (count,) = db.execute(
                        "SELECT COUNT(*) FROM memories WHERE user_id=? AND agent=?", key
                    ).fetchone()
                    if count >= self.max_items:
                        raise MemoryFull(f"this memory holds {count} items, its limit; forget some first")
                    item_id = item_id or uuid.uuid4().hex
                assert item_id is not None
                db.execute(
                    "INSERT OR REPLACE INTO memories (user_id, agent, id, text, metadata, source_session, "
                    "created_at, updated_at, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (*key, item_id, text, meta, source_session, created, stamp, pack_embedding(vector)),
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return MemoryItem(item_id, namespace, text, created, stamp, json.loads(meta), source_session, vector)

    def _get(self, namespace: MemoryNamespace, item_id: str) -> MemoryItem | None:
        with self._connect() as db:
            row = db.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE user_id=? AND agent=? AND id=?",
                (namespace.user_id, _agent_key(namespace), item_id),
            ).fetchone()
        return None if row is None else self._item(namespace, row)

    def _candidates(self, namespace: MemoryNamespace, embedded: bool) -> list[Candidate]:
        # Only what ranking reads: whole items are built for the hits alone.
        vector = "embedding" if embedded else "NULL"
        with self._connect() as db:
            rows = db.execute(
                f"SELECT id, text, updated_at, {vector} FROM memories WHERE user_id=? AND agent=?",
                (namespace.user_id, _agent_key(namespace)),
            ).fetchall()
        return [Candidate(i, text, updated, unpack_embedding(blob)) for i, text, updated, blob in rows]

    def _search(
        self, namespace: MemoryNamespace, query: str, vector: tuple[float, ...] | None, limit: int
    ) -> list[MemoryHit]:
        ranked = rank(self._candidates(namespace, vector is not None), query, vector, limit)
        if not ranked:
            return []
        marks = ",".join("?" * len(ranked))
        with self._connect() as db:
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE user_id=? AND agent=? AND id IN ({marks})",
                (namespace.user_id, _agent_key(namespace), *(i for i, _ in ranked)),
            ).fetchall()
        items = {row[0]: self._item(namespace, row) for row in rows}
        return [MemoryHit(items[i], score) for i, score in ranked if i in items]

    def _delete(self, namespace: MemoryNamespace, item_id: str) -> bool:
        with self._connect() as db:
            done = db.execute(
                "DELETE FROM memories WHERE user_id=? AND agent=? AND id=?",
                (namespace.user_id, _agent_key(namespace), item_id),
            )
        return done.rowcount > 0

    def _listed(self, user_id: str, row: Sequence[Any]) -> MemoryItem:
        return self._item(MemoryNamespace(user_id, row[0] or None), row[1:])

    def _list_user(
        self, user_id: str, wanted: set[str], limit: int, after: MemoryCursor | None
    ) -> MemoryPage:
        # Keyset pages in (created_at, agent, id) order. A query filters in batches: a page holds
        # one batch and its own items in memory, never all of the user's items at once.
        found: list[MemoryItem] = []
        cursor = after
        with self._connect() as db:
            while len(found) <= limit:
                where, args = "user_id=?", [user_id]
                if cursor is not None:
                    where += " AND (created_at, agent, id) < (?, ?, ?)"
                    args += [cursor.created_at, cursor.agent, cursor.item_id]
                rows = db.execute(
                    f"SELECT {_LISTED} FROM memories WHERE {where} "
                    "ORDER BY created_at DESC, agent DESC, id DESC LIMIT ?",
                    (*args, _LIST_BATCH if wanted else limit + 1),
                ).fetchall()
                for row in rows:
                    item = self._listed(user_id, row)
                    if matches(wanted, item):
                        found.append(item)
                        if len(found) > limit:
                            break
                if not wanted or len(rows) < _LIST_BATCH:
                    break
                cursor = MemoryCursor(rows[-1][5], rows[-1][0], rows[-1][1])
        if len(found) > limit:
            return MemoryPage(found[:limit], MemoryCursor.after(found[limit - 1]))
        return MemoryPage(found, None)

    def _find(self, user_id: str, item_id: str) -> MemoryItem | None:
        with self._connect() as db:
            row = db.execute(
                f"SELECT {_LISTED} FROM memories WHERE user_id=? AND id=? ORDER BY agent LIMIT 1",
                (user_id, item_id),
            ).fetchone()
        return None if row is None else self._listed(user_id, row)

    # -- MemoryStore ----------------------------------------------------------------------

    async def put(
        self,
        namespace: MemoryNamespace,
        text: str,
        *,
        item_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        source_session: str | None = None,
        embedding: Sequence[float] | None = None,
        upsert: bool = False,
    ) -> MemoryItem:
        return await asyncio.to_thread(
            self._put, namespace, text, item_id, metadata, source_session, embedding, upsert
        )

    async def get(self, namespace: MemoryNamespace, item_id: str) -> MemoryItem | None:
        return await asyncio.to_thread(self._get, namespace, item_id)

    async def search(
        self,
        namespace: MemoryNamespace,
        query: str = "",
        *,
        embedding: Sequence[float] | None = None,
        limit: int = 10,
    ) -> list[MemoryHit]:
        limit = checked_limit(limit)
        vector = checked_embedding(embedding)
        return await asyncio.to_thread(self._search, namespace, query, vector, limit)

    async def delete(self, namespace: MemoryNamespace, item_id: str) -> bool:
        return await asyncio.to_thread(self._delete, namespace, item_id)

    async def list_user(
        self, user_id: str, query: str = "", *, limit: int = 20, after: MemoryCursor | None = None
    ) -> MemoryPage:
        checked_part(user_id, "a user id")
        wanted, limit = checked_listing(query, limit)
        return await asyncio.to_thread(self._list_user, user_id, wanted, limit, after)

    async def find(self, user_id: str, item_id: str) -> MemoryItem | None:
        checked_part(user_id, "a user id")
        checked_part(item_id, "a memory's id")
        return await asyncio.to_thread(self._find, user_id, item_id)
