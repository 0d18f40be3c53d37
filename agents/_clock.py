"""The one clock reading every stored timestamp is made from."""

from __future__ import annotations

from datetime import UTC, datetime


def now_iso() -> str:
    """The current UTC time in RFC 3339 (what every `createdAt`, `updatedAt` and `...At` holds)."""
    return datetime.now(UTC).isoformat()
