"""The embedded stream store: one SQLite file, nothing to install (the default for `make run`).

It survives a restart of the local host (the file stays), and readers in the writer's process are
woken at once. Writers in other processes (the local host's worker processes share the file) are
seen through one watcher thread per store and process, not by each reader: every `poll_interval`
(5 ms) it asks SQLite whether the file changed (``PRAGMA data_version``, answered from memory) and
only then which followed runs have new events, and wakes their readers. An idle reader costs
nothing, and the watcher runs only while some reader of this process follows a run that may be
written elsewhere: not while an operation of the run's session runs in this process (the entity
operation running a run is its only writer), nor `LOCAL_GRACE` looks before and after one.
For more than one instance use Redis (`_redis.py`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import json
import logging
import os
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path

from agents import retry_while_locked

from .._ids import entity_name
from .._wakeup import notify, runs_operations, session_running, session_topic, start_waiter, waiter
from ._store import READ_BATCH, RunClaim, StreamConflict, StreamEvent, StreamKey, StreamStoreUnavailable

log = logging.getLogger("hosting.streams")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS streams (key TEXT PRIMARY KEY, expires REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (
    key TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (key, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY, request TEXT, live INTEGER NOT NULL, expires REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cancels (key TEXT PRIMARY KEY, expires REAL NOT NULL) WITHOUT ROWID;
"""
_UPSERT_STREAM = (
    "INSERT INTO streams (key, expires) VALUES (?, ?) "
    "ON CONFLICT (key) DO UPDATE SET expires = excluded.expires"
)
_PURGE_EVERY = 500
POLL_INTERVAL = 0.005
"""Seconds between the watcher's checks of the file: a run finished in another worker process
wakes its waiting caller this late at most (a waiting JSON turn is answered this much later than
when its entity runs in the caller's process)."""
LOCAL_GRACE = 2
"""Poll intervals a reader lets pass before the watcher looks at its run for it, after it began
following and after an operation of the run's session last ran in this process: a run sent from this
process usually starts here within a millisecond or two when this process runs entities (the
next step of a turn too), and then its events wake the reader without any poll. A run whose
entity runs in another process is seen this late at most, on top of `POLL_INTERVAL`; in a process
that never ran an entity operation (HTTP only, as in the flex topology) there is no grace."""
WATCH_SHARE = 0.25
"""The most of a core the watcher takes while other processes write all the time: after a check
that took `t`, it sleeps at least `t / WATCH_SHARE - t`."""


class SqliteStreamStore:
    """`StreamStore` on a SQLite file (WAL), one connection per thread."""

    def __init__(
        self, path: str | os.PathLike[str], retention: float, poll_interval: float = POLL_INTERVAL
    ) -> None:
        self.path = Path(path)
        self.retention = retention
        self.poll_interval = poll_interval
        self._local = threading.local()
        self._appends = itertools.count()
        self._writer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="stream-writer")
        self._followed: Counter[str] = Counter()  # key text -> readers following it in this process
        self._watch_lock = threading.Condition()
        self._watcher: threading.Thread | None = None
        self._added = False  # a run was added since the watcher's last look at the runs
        self.checks = 0
        """How many times the watcher has checked the file (what tests and benches count)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # A new file is this user's alone (SQLite gives its -wal and -shm files the same mode).
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        with self._connect() as db:
            db.executescript(_SCHEMA)
        self._purge()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=False)
        # Several worker processes open the store at once: the switch to WAL may meet a lock.
        try:
            retry_while_locked(lambda: db.execute("PRAGMA journal_mode=WAL"))
        except BaseException:
            db.close()
            raise
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = self._connect()
        return db

    def _topic(self, key: StreamKey) -> str:
        return f"{self.path}\n{key.text()}"

    def _purge(self) -> None:
        db = self._db()
        with db:
            db.execute("BEGIN IMMEDIATE")
            expired = "SELECT key FROM streams WHERE expires < ?"
            now = time.time()
            db.execute(f"DELETE FROM events WHERE key IN ({expired})", (now,))
            db.execute("DELETE FROM streams WHERE expires < ?", (now,))
            db.execute("DELETE FROM claims WHERE expires < ?", (now,))
            db.execute("DELETE FROM cancels WHERE expires < ?", (now,))

    async def declare(self, key: StreamKey) -> None:
        self._db().execute(_UPSERT_STREAM, (key.text(), time.time() + self.retention))

    async def claim(self, key: StreamKey, claim: RunClaim, *, replace: bool = False) -> RunClaim | None:
        # On the caller's thread (a short transaction; a hop to the writer thread costs more).
        return self._claim(key, claim, replace)

    def _claim(self, key: StreamKey, claim: RunClaim, replace: bool) -> RunClaim | None:
        db = self._db()
        text = key.text()
        now = time.time()
        with db:
            db.execute("BEGIN IMMEDIATE")
            row = db.execute(
                "SELECT request, live FROM claims WHERE key = ? AND expires >= ?", (text, now)
            ).fetchone()
            if row is not None and not replace:
                return RunClaim(row[0], bool(row[1]))
            db.execute(
                "INSERT INTO claims (key, request, live, expires) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET request = excluded.request, live = excluded.live, "
                "expires = excluded.expires",
                (text, claim.request_hash, int(claim.live), now + self.retention),
            )
            db.execute(_UPSERT_STREAM, (text, now + self.retention))
        return None

    async def claimed(self, key: StreamKey) -> RunClaim | None:
        row = (
            self._db()
            .execute(
                "SELECT request, live FROM claims WHERE key = ? AND expires >= ?", (key.text(), time.time())
            )
            .fetchone()
        )
        return None if row is None else RunClaim(row[0], bool(row[1]))

    async def request_cancel(self, key: StreamKey) -> bool:
        self._db().execute(
            "INSERT INTO cancels (key, expires) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET expires = excluded.expires",
            (key.text(), time.time() + self.retention),
        )
        return True

    async def withdraw_cancel(self, key: StreamKey) -> None:
        self._db().execute("DELETE FROM cancels WHERE key = ?", (key.text(),))

    async def cancel_requested(self, key: StreamKey) -> bool:
        row = self._db().execute(
            "SELECT 1 FROM cancels WHERE key = ? AND expires >= ?", (key.text(), time.time())
        ).fetchone()
        return row is not None

    async def opening(self, key: StreamKey) -> tuple[RunClaim | None, StreamEvent | None]:
        # Plain calls, not a gather of the two coroutines: both are short reads on this thread.
        return await self.claimed(key), await self.last(key)

    async def release(self, key: StreamKey) -> None:
        db = self._db()
        with db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM claims WHERE key = ?", (key.text(),))
            db.execute(
                "DELETE FROM streams WHERE key = ? AND NOT EXISTS (SELECT 1 FROM events WHERE key = ?)",
                (key.text(), key.text()),
            )

    async def exists(self, key: StreamKey) -> bool:
        row = (
            self._db()
            .execute("SELECT 1 FROM streams WHERE key = ? AND expires >= ?", (key.text(), time.time()))
            .fetchone()
        )
        return row is not None

    async def append(self, key: StreamKey, event: StreamEvent) -> None:
        await self.append_many(key, [event])

    async def append_many(self, key: StreamKey, events: Sequence[StreamEvent]) -> None:
        # One writer thread for the file: writers never wait on each other's locks, and the
        # caller's loop goes on (the publisher batches what arrives meanwhile).
        await asyncio.get_running_loop().run_in_executor(self._writer, self._write, key, list(events))

    def _write(self, key: StreamKey, events: list[StreamEvent]) -> None:
        db = self._db()
        text = key.text()
        rows = [(text, e.seq, e.type, json.dumps(e.data, separators=(",", ":"))) for e in events]
        try:
            with db:
                db.execute("BEGIN IMMEDIATE")
                db.executemany("INSERT INTO events (key, seq, type, data) VALUES (?, ?, ?, ?)", rows)
                db.execute(_UPSERT_STREAM, (text, time.time() + self.retention))
        except sqlite3.IntegrityError as exc:
            raise StreamConflict(
                f"events {events[0].seq}-{events[-1].seq} of {text}: a number is taken"
            ) from exc
        # Straight from the writer thread: readers wake without a detour through the caller's loop.
        notify(self._topic(key))
        if next(self._appends) % _PURGE_EVERY == _PURGE_EVERY - 1:
            self._purge()

    async def last(self, key: StreamKey) -> StreamEvent | None:
        row = (
            self._db()
            .execute(
                "SELECT e.seq, e.type, e.data FROM events e JOIN streams s ON s.key = e.key "
                "WHERE e.key = ? AND s.expires >= ? ORDER BY e.seq DESC LIMIT 1",
                (key.text(), time.time()),
            )
            .fetchone()
        )
        return None if row is None else StreamEvent(row[0], row[1], json.loads(row[2]))

    async def discard(self, key: StreamKey) -> None:
        self._db().execute("DELETE FROM events WHERE key = ?", (key.text(),))

    def _read(self, key: StreamKey, after: int) -> list[StreamEvent]:
        rows = (
            self._db()
            .execute(
                "SELECT seq, type, data FROM events WHERE key = ? AND seq > ? ORDER BY seq LIMIT ?",
                (key.text(), after, READ_BATCH),
            )
            .fetchall()
        )
        return [StreamEvent(seq, kind, json.loads(data)) for seq, kind, data in rows]

    @contextlib.contextmanager
    def _watched(self, key: StreamKey) -> Iterator[Callable[[bool], None]]:
        """For the `with` block, a switch: whether the watcher looks at `key` for this reader."""
        text = key.text()
        on = False

        def switch(want: bool) -> None:
            nonlocal on
            if want == on:
                return
            on = want
            with self._watch_lock:
                if want:
                    self._followed[text] += 1
                    # The reader read before this: a write from another process since then may
                    # be older than the watcher's last check, so the next check looks anyway.
                    self._added = True
                    if self._watcher is None:
                        self._watcher = threading.Thread(
                            target=self._watch, name="stream-watcher", daemon=True
                        )
                        self._watcher.start()
                    self._watch_lock.notify()
                else:
                    self._drop(text)

        try:
            yield switch
        finally:
            if on:
                with self._watch_lock:
                    self._drop(text)

    def _drop(self, text: str) -> None:
        self._followed[text] -= 1
        if self._followed[text] <= 0:
            del self._followed[text]

    def _watch(self) -> None:
        """Wake the readers of runs another process appended to (see the module)."""
        db = self._connect()
        version = None
        seen: dict[str, tuple[int, int]] = {}
        while True:
            if not self._followed:
                with self._watch_lock:
                    while not self._followed:
                        version = None
                        seen.clear()
                        self._watch_lock.wait()
            began = time.perf_counter()
            self.checks += 1
            try:
                now = db.execute("PRAGMA data_version").fetchone()[0]
                with self._watch_lock:
                    added, self._added = self._added, False
                if now != version or added:
                    version = now
                    with self._watch_lock:
                        keys = list(self._followed)
                    found = self._tails(db, keys)
                    for text in keys:
                        tail = found.get(text, (0, 0))
                        # A run seen for the first time too: it may have moved on before.
                        if seen.get(text) != tail:
                            notify(f"{self.path}\n{text}")
                        seen[text] = tail
                    for text in set(seen) - set(keys):
                        del seen[text]
            except sqlite3.Error:
                log.exception("stream watcher of %s: read failed", self.path)
            spent = time.perf_counter() - began
            time.sleep(max(self.poll_interval, spent / WATCH_SHARE - spent))

    @staticmethod
    def _tails(db: sqlite3.Connection, keys: list[str]) -> dict[str, tuple[int, int]]:
        found: dict[str, tuple[int, int]] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for text, top, count in db.execute(
                f"SELECT key, MAX(seq), COUNT(*) FROM events WHERE key IN ({marks}) GROUP BY key", chunk
            ):
                found[text] = (top, count)
        return found

    async def follow(self, key: StreamKey, after: int, idle: float) -> AsyncIterator[StreamEvent | None]:
        loop = asyncio.get_running_loop()
        quiet_since = loop.time()
        session = session_topic(entity_name(key.agent), key.session_id)
        # A reader reads when woken, never on a timer: by a writer in this process, by an
        # operation of the run's session starting or ending here, or by the watcher.
        woken = asyncio.Event()
        with (
            waiter(self._topic(key), woken),
            waiter(session, woken),
            start_waiter(session, woken),
            self._watched(key) as watch,
        ):
            # Only writes from another process need the watcher: none come while an operation of
            # the session runs here (one operation at a time per session, and it writes the
            # session's events), nor, mostly, just before or after one (see `LOCAL_GRACE`).
            # None to wait for in a process that never ran an entity operation (HTTP only).
            grace = LOCAL_GRACE * self.poll_interval if runs_operations() else 0.0
            local_until = loop.time() + grace
            was_local = False
            while True:
                woken.clear()  # before reading: an append after this read sets it again
                events = self._read(key, after)
                for event in events:
                    yield event
                    if event.terminal:
                        return
                    after = event.seq
                now = loop.time()
                if events:
                    quiet_since = now
                while True:
                    local = session_running(session)
                    if local or was_local:
                        local_until = now + grace
                    was_local = local
                    watch(now >= local_until)
                    if events or woken.is_set() or now - quiet_since >= idle:
                        break
                    # The end of the operation here wakes the reader; past the grace, the watcher's
                    # first look does: no read of its own.
                    wait = quiet_since + idle - now
                    if not local and now < local_until:
                        wait = min(wait, local_until - now)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(woken.wait(), wait)
                    now = loop.time()
                if now - quiet_since >= idle:
                    yield None
                    quiet_since = loop.time()

    async def ping(self) -> str:
        started = time.perf_counter()
        try:
            self._db().execute("SELECT 1 FROM streams LIMIT 1").fetchall()
        except sqlite3.Error as error:
            raise StreamStoreUnavailable(f"the stream store file {self.path}: {error}") from error
        return f"SQLite file answered in {(time.perf_counter() - started) * 1000:.0f} ms"

    async def aclose(self) -> None:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None
