"""SQLite files that several processes open at once (the memory store, and a host's own stores).

Switching a file to WAL needs it to itself, and SQLite then answers "database is locked" at once
instead of waiting out its busy timeout; worker processes importing the app together meet that
on their first connection, so the switch is tried again briefly.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

LOCKED_ATTEMPTS = 100
LOCKED_PAUSE = 0.05  # seconds: 100 attempts wait about 5 s in all


def retry_while_locked(operation: Callable[[], T]) -> T:
    """`operation()`, called again while SQLite answers that the file is locked (up to
    `LOCKED_ATTEMPTS` times, `LOCKED_PAUSE` apart); any other error, or the last "locked", is
    raised."""
    for attempt in range(1, LOCKED_ATTEMPTS + 1):
        try:
            return operation()
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or attempt == LOCKED_ATTEMPTS:
                raise
            time.sleep(LOCKED_PAUSE)
    raise AssertionError("unreachable")  # the last attempt returns or raises
