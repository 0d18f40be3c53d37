"""The SQLite file both of the local host's stores live in."""

from __future__ import annotations

import pathlib
import sqlite3

DB_NAME = "devhost.db"
"""The file in the data directory holding the host's state."""


def open_database(path: pathlib.Path, schema: str) -> sqlite3.Connection:
    """Open (creating if needed) the host's database in WAL mode and apply ``schema``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # Autocommit mode: every store manages its own BEGIN/COMMIT around each unit of work.
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
    conn.execute("PRAGMA journal_mode=WAL")
    # NORMAL in WAL mode survives a killed process; only an OS crash may lose the last commits.
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=30000")
    conn.executescript(schema)
    return conn
