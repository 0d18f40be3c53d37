"""A session's lifecycle: idle expiry (TTL, the per-agent sweeper, the one-shot expiry check),
cleanup of archived chunks after a reset or delete, a user's erasure, and their durable names."""

from ._approval_expiry import approval_timeout, approvals_due, start_approval_expiry
from ._ended import start_session_ended
from ._erasure import ERASE_DELETE_KEY
from ._expiry import reset_or_delete
from ._names import (
    CLEANUP,
    ERASURE,
    EXPIRY,
    FORGET,
    SWEEP,
    SWEEPER,
    erasure_instance,
    expiry_instance,
    sweeper_instance,
)
from ._register import register_lifecycle
from ._sweeper import ensure_sweepers, sweep_interval, sweepers_of
from ._ttl import DEFAULT_TTL, TTL_ENV, due_at, expires_at, ttl_for

__all__ = [
    "CLEANUP",
    "DEFAULT_TTL",
    "ERASE_DELETE_KEY",
    "ERASURE",
    "EXPIRY",
    "FORGET",
    "SWEEP",
    "SWEEPER",
    "TTL_ENV",
    "approval_timeout",
    "approvals_due",
    "due_at",
    "ensure_sweepers",
    "erasure_instance",
    "expires_at",
    "expiry_instance",
    "register_lifecycle",
    "reset_or_delete",
    "start_approval_expiry",
    "start_session_ended",
    "sweep_interval",
    "sweeper_instance",
    "sweepers_of",
    "ttl_for",
]
