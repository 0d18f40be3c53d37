"""The webhook settings (docs/hosting.md "Settings"; `WebhookSettings`, read once at startup): the
allowlist (hosting.webhooks._urls), the signing secret, and the delivery's pace, which travels with
the delivery, so a run's retries follow the settings it was requested under."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .._settings import WEBHOOK_SECRET_ENV as SECRET_ENV
from .._settings import WebhookSettings

__all__ = ["SECRET_ENV"]


@dataclass(frozen=True)
class Pace:
    """How a delivery is tried: `attempts` in all, the n-th retry `first_retry * 2**(n-1)` seconds
    after the failure (at most `max_retry`), each attempt given `timeout` seconds; the run's end
    is looked for every `poll` seconds at first (doubling up to a minute)."""

    attempts: int = 8
    first_retry: float = 5.0
    max_retry: float = 3600.0
    timeout: float = 10.0
    poll: float = 1.0

    def to_json(self) -> dict[str, float]:
        return {
            "attempts": self.attempts, "firstRetry": self.first_retry, "maxRetry": self.max_retry,
            "timeout": self.timeout, "poll": self.poll,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, float]) -> Pace:
        return cls(
            int(raw["attempts"]), float(raw["firstRetry"]), float(raw["maxRetry"]),
            float(raw["timeout"]), float(raw["poll"]),
        )


def pace_from_env(environ: Mapping[str, str] | None = None) -> Pace:
    """The delivery pace from the settings in `environ` (default: the environment) now."""
    return pace_of(WebhookSettings.load(environ))


def pace_of(settings: WebhookSettings) -> Pace:
    """The delivery pace the settings name (defaults: 8 attempts, 5 s doubling to an hour, 10 s
    per attempt, the run's end looked for after 1 s)."""
    return Pace(settings.attempts, settings.first_retry, settings.max_retry, settings.timeout, settings.poll)
