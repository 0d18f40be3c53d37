"""What a run asks to be told when it ends (`Webhook`), and the payload formats deliveries render.

A format renders the ended run as the body (and extra headers) of the POST: `run` (the run
resource, registered by hosting.http) by default; a protocol edge registers its own (A2A pushes
a Task). The registry keeps the delivery code from importing any edge: an edge imports this
package, never the other way round.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

RUN_FORMAT = "run"
"""The default payload: the JSON `GET /api/agents/{agent}/sessions/{session}/runs/{id}` answers."""


@dataclass(frozen=True)
class Webhook:
    """Where to POST a run's outcome once it ends (checked by `check_webhook` before anything is
    stored). `token`: handed to the format's renderer (A2A sends it as
    `X-A2A-Notification-Token`); `format`: a registered renderer's name."""

    url: str
    token: str | None = None
    format: str = RUN_FORMAT

    def to_json(self) -> dict[str, Any]:
        return {"url": self.url, "token": self.token, "format": self.format}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Webhook:
        return cls(str(raw["url"]), raw.get("token"), str(raw.get("format") or RUN_FORMAT))


@dataclass(frozen=True)
class EndedRun:
    """The run a delivery is about, as the renderer gets it."""

    agent: str
    session_id: str
    correlation_id: str
    user_id: str | None
    token: str | None


@dataclass(frozen=True)
class Rendered:
    """A delivery's payload: the body (JSON bytes, signed as they are) and headers to add."""

    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


Renderer = Callable[[Any, EndedRun], Awaitable[Rendered]]
"""`(durable_client, run) -> Rendered`: reads the ended run through the client and renders it."""

_FORMATS: dict[str, Renderer] = {}


def register_format(name: str, renderer: Renderer) -> None:
    """Make `name` a `format` a run's webhook may name (the app builder and edges call it once)."""
    _FORMATS[name] = renderer


def renderer_of(name: str) -> Renderer | None:
    """The renderer registered as `name`, or None."""
    return _FORMATS.get(name)


def formats() -> list[str]:
    """The registered format names."""
    return sorted(_FORMATS)
