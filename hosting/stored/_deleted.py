"""Sessions a delete removed: the delete leaves a tombstone, so the runs it discarded answer 410
instead of `pending` forever.

The Durable extension reports a deleted entity exactly like one that was never created
(`entityExists: false`; the HTTP API answers 404), so from the outside a deleted session and a new
one whose first turn is still queued look the same. The delete therefore keeps a small state: an
empty 1.4.0 history with `data.deletedAt` (when) and `data.discardedRuns` (the ids of the runs it
cleared, as a reset keeps them), no content. The HTTP side treats such a state as no session at
all (404, not listed); a new turn starts a fresh history on it (keeping the discarded ids, so a
retried key of a deleted run is refused as after a reset); idle expiry removes it for good one TTL
after the delete. A delete with nothing to remember (no runs, or an unreadable state) removes the
entity outright, as before.
"""

from __future__ import annotations

import json
from typing import Any

from state import AgentState

from ._discarded import DISCARDED_KEY, reset_text
from ._runs import compact_text

DELETED_KEY = "deletedAt"


def is_tombstone(document: Any) -> bool:
    """Whether a parsed state document is what a delete left behind (an empty history marked
    `deletedAt`; a turn on it since would have dropped the mark)."""
    data = document.get("data") if isinstance(document, dict) else None
    return isinstance(data, dict) and DELETED_KEY in data and data.get("conversationHistory") == []


def text_is_tombstone(text: str) -> bool:
    """`is_tombstone` on stored state text, parsing it only when it may be one."""
    return f'"{DELETED_KEY}"' in text and is_tombstone(json.loads(text))


def tombstone_text(old_text: str | None, now: str) -> str | None:
    """The state a delete leaves (`now`: RFC 3339), or None when there is nothing to remember:
    no state, an unreadable one, a tombstone already (a second delete removes it for good), or
    no runs at all."""
    if old_text is None:
        return None
    try:
        if text_is_tombstone(old_text):
            return None
        fresh = AgentState.new()
        fresh.last_activity_at = now  # idle expiry removes the tombstone one TTL after the delete
        document = json.loads(reset_text(old_text, fresh))
    except (ValueError, TypeError, AttributeError):
        return None  # not JSON, or not a state's shape: the documented way out removes it all
    data = document["data"]
    if not data.get(DISCARDED_KEY):
        return None
    data[DELETED_KEY] = now
    return compact_text(document)


def revived_text(text: str) -> str:
    """A tombstone as the start of a new history: the same state without `deletedAt`."""
    document = json.loads(text)
    document["data"].pop(DELETED_KEY, None)
    return compact_text(document)
