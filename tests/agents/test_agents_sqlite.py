"""A SQLite file several processes open at once: an operation that meets another connection's
lock on a real file is tried again until the lock is gone; other errors are not retried."""

from __future__ import annotations

import pathlib
import sqlite3
import threading

import pytest

from agents import retry_while_locked


def test_a_locked_file_is_tried_again_until_the_lock_is_released(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "shared.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")  # what a process switching the file to WAL holds
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    attempts: list[int] = []

    def switch() -> str:
        attempts.append(1)
        return str(other.execute("PRAGMA journal_mode=WAL").fetchone()[0])

    release = threading.Timer(0.3, holder.execute, args=("COMMIT",))
    release.start()
    try:
        assert retry_while_locked(switch) == "wal"
    finally:
        release.join()
        other.close()
        holder.close()
    assert len(attempts) > 1  # it met the lock at least once


def test_other_errors_are_raised_at_once(tmp_path: pathlib.Path) -> None:
    db = sqlite3.connect(tmp_path / "plain.db")
    attempts: list[int] = []

    def broken() -> None:
        attempts.append(1)
        db.execute("SELECT * FROM missing")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        retry_while_locked(broken)
    assert attempts == [1]
    db.close()
