"""The durable names of a session's lifecycle (orchestrations, activities, instance ids), in one
place: the sweeper starts expiry checks by name, the HTTP side starts cleanups by name, and the
registration declares them all."""

from __future__ import annotations

import uuid

EXPIRY = "dafx_session_expiry"
"""Orchestration: the one-shot idle check of one session (hosting.lifecycle._expiry)."""
CLEANUP = "dafx_session_cleanup"
"""Orchestration: a reset or delete of a session with archived history, then its chunks."""
FORGET = "dafx_forget_history"
"""Activity: delete one archive epoch's chunks."""
SWEEPER = "dafx_session_sweeper"
"""Orchestration: one agent's eternal sweeper of idle sessions (hosting.lifecycle._sweeper)."""
SWEEP = "dafx_sweep_sessions"
"""Activity: one sweep (takes a durable client)."""
APPROVAL_EXPIRY = "dafx_approval_expiry"
"""Orchestration: a paused turn's undecided approvals expire (hosting.lifecycle._approval_expiry)."""


def approval_instance(agent: str, session_id: str, correlation_id: str, step: int) -> str:
    """The instance id of the expiry of one step's approvals (one per step: idempotent start)."""
    return f"{approval_prefix(agent)}{session_id}-{step}-{correlation_id}"


def approval_prefix(agent: str) -> str:
    """What the instance ids of `agent`'s approval expiries start with (purged once finished)."""
    return f"dafx-approval-{agent}-"

"""Activity: one sweep (takes a durable client)."""


def expiry_instance(agent: str, session_id: str) -> str:
    """The instance id of a session's expiry watcher."""
    return f"{expiry_prefix(agent)}{session_id}"


def expiry_prefix(agent: str) -> str:
    """What the instance ids of `agent`'s expiry checks start with (the sweeper purges the
    finished ones by it)."""
    return f"dafx-expiry-{agent}-"


def cleanup_instance(agent: str, session_id: str) -> str:
    """A new instance id for a cleanup (reset or delete, then the chunks) of a session: unique,
    and under `cleanup_prefix(agent)` so the sweeper finds it to purge once finished."""
    return f"{cleanup_prefix(agent)}{session_id}-{uuid.uuid4().hex}"


def cleanup_prefix(agent: str) -> str:
    """What the instance ids of `agent`'s cleanups start with."""
    return f"dafx-cleanup-{agent}-"


def sweeper_instance(agent: str) -> str:
    """The instance id of an agent's expiry sweeper."""
    return f"dafx-sweeper-{agent}"

ERASURE = "dafx_user_erasure"
"""Orchestration: erase everything kept for one user (hosting.lifecycle._erasure)."""
ERASE_FIND_SESSIONS = "dafx_erasure_find_sessions"
"""Activity: one agent's sessions of the user, with what each left in the archive and streams
(takes a durable client)."""
ERASE_SESSION_DATA = "dafx_erasure_forget_sessions"
"""Activity: delete the archived chunks and stream events of deleted sessions."""
ERASE_FIND_MEMORIES = "dafx_erasure_find_memories"
"""Activity: the ids of the user's long-term memory items."""
ERASE_MEMORIES = "dafx_erasure_forget_memories"
"""Activity: delete some of the user's long-term memory items."""


def erasure_instance(user: str) -> str:
    """The instance id of a user's erasure: one per user, so a second request attaches to the
    one under way."""
    return f"dafx-erase-{user}"
