"""A response id is a run: `resp_` and the URL-safe base64 (no padding) of
`{agent}\\n{session_id}\\n{correlation_id}`, so a retrieve, a cancel or a `previous_response_id`
finds the run's session without any table of its own (nothing another instance would not share).

The id names a run but grants nothing: every read through it checks the session's owner as the
product's own routes do, so another user's id is a 404.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from .._ids import id_problem

PREFIX = "resp_"
_SEPARATOR = "\n"
MAX_RESPONSE_ID_LENGTH = 1024
"""Longer than any id this app hands out; a longer one is refused before it is decoded."""


@dataclass(frozen=True)
class RunRef:
    """The run a response id names."""

    agent: str
    session_id: str
    correlation_id: str

    @property
    def response_id(self) -> str:
        raw = _SEPARATOR.join((self.agent, self.session_id, self.correlation_id)).encode()
        return PREFIX + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_response_id(value: str) -> RunRef | None:
    """The run `value` names, or None when it is no id this app could have handed out."""
    if not value.startswith(PREFIX) or len(value) > MAX_RESPONSE_ID_LENGTH:
        return None
    body = value[len(PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    parts = raw.split(_SEPARATOR)
    if len(parts) != 3 or not all(parts) or id_problem(parts[1]) or id_problem(parts[2]):
        return None  # not ids the product could have stored: never sent on to an entity
    ref = RunRef(*parts)
    return ref if ref.response_id == value else None  # one spelling per run
