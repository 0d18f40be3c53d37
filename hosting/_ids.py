"""Session ids, correlation ids and request hashes: validation and deterministic derivation."""

from __future__ import annotations

import hashlib
import re
import secrets

MAX_ID_LENGTH = 128
"""Longest accepted session id, correlation id or Idempotency-Key."""

# URL-unreserved characters only: ids end up in entity keys ("name@key") and URL paths, so `@`,
# `/`, whitespace and control characters must never get in.
_ID_PATTERN = re.compile(rf"[A-Za-z0-9._~-]{{1,{MAX_ID_LENGTH}}}")
_KEY_PATTERN = re.compile(rf"[\x21-\x7e]{{1,{MAX_ID_LENGTH}}}")

_DOT_SEGMENTS = (".", "..")

# The same rule with "." and ".." excluded, without lookaround (pydantic's regex engine has none).
_C, _N = "[A-Za-z0-9._~-]", "[A-Za-z0-9_~-]"
ID_PATTERN_TEXT = (
    f"^(?:{_N}{_C}{{0,{MAX_ID_LENGTH - 1}}}|\\.{_N}{_C}{{0,{MAX_ID_LENGTH - 2}}}"
    f"|\\.\\.{_C}{{1,{MAX_ID_LENGTH - 2}}})$"
)
"""The accepted shape of ids, as a regular expression (published in the OpenAPI document)."""

IDEMPOTENCY_KEY_PATTERN_TEXT = f"^{_KEY_PATTERN.pattern}$"
"""The accepted shape of an Idempotency-Key header (published in the OpenAPI document)."""


def id_problem(value: str) -> str | None:
    """Why `value` is not an acceptable session or correlation id, or None when it is."""
    if not value:
        return "must not be empty"
    if len(value) > MAX_ID_LENGTH:
        return f"must be at most {MAX_ID_LENGTH} characters long (got {len(value)})"
    if _ID_PATTERN.fullmatch(value) is None:
        bad = next(c for c in value if _ID_PATTERN.fullmatch(c) is None)
        return f"contains {bad!r}; only letters, digits, '.', '_', '~' and '-' are allowed"
    if value in _DOT_SEGMENTS:
        # Ids become URL path segments on the way to the entity, where '.' and '..' are dot
        # segments that URL normalisation removes: the request would reach another resource.
        return f"must not be {value!r} (a URL dot segment)"
    return None


STRATEGY_KEY = "multitaskStrategy"
"""Where a `run` operation's input names what to do when the session is busy (absent: enqueue;
docs/hosting.md "Runs sent to a busy session")."""

MULTITASK_STRATEGIES = ("enqueue", "reject", "interrupt", "steer")
"""What a run may ask when its session has a turn running or runs queued."""

USER_KEY = "userId"
"""Where a `run` operation's input (the turn request's JSON) names the user the turn acts for;
user ids follow the id rule above (`id_problem`): they end up in stored documents and URLs."""


def idempotency_key_problem(value: str) -> str | None:
    """Why `value` is not an acceptable Idempotency-Key header, or None when it is."""
    if not value or len(value) > MAX_ID_LENGTH or _KEY_PATTERN.fullmatch(value) is None:
        return f"must be 1 to {MAX_ID_LENGTH} printable ASCII characters without spaces"
    return None


def new_session_id() -> str:
    """A fresh, unguessable session id (128 random bits)."""
    return secrets.token_hex(16)


def _digest(*parts: str) -> str:
    # NUL separators keep ("ab", "c") and ("a", "bc") apart.
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def session_id_for_key(agent: str, idempotency_key: str, user: str | None = None) -> str:
    """The session id a new-session request with this Idempotency-Key lands in, so a retry of it
    reaches the same session instead of starting another one; each user's keys are their own (two
    users sending the same key land in two sessions)."""
    if user is None:
        return _digest("session", agent, idempotency_key)[:32]
    return _digest("session", agent, idempotency_key, "user", user)[:32]


def correlation_id_for_key(agent: str, session_id: str, idempotency_key: str) -> str:
    """The correlation id of the run an Idempotency-Key names within one session."""
    return _digest("run", agent, session_id, idempotency_key)[:32]


ENTITY_PREFIX = "dafx-"
"""Entity names are this prefix plus the agent name (the naming the Durable Task Scheduler
dashboard recognises as agent sessions)."""


def entity_name(agent_name: str) -> str:
    """The entity name of a hosted agent."""
    return ENTITY_PREFIX + agent_name
