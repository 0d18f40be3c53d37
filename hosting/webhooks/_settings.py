"""The webhook settings (docs/hosting.md "Settings"): the allowlist (hosting.webhooks._urls), the
signing secret, and the delivery's pace, read when a run is requested (the pace then travels with
the delivery, so a run's retries follow the settings it was requested under)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from .._numbers import number_setting

SECRET_ENV = "DURABLE_AGENTS_WEBHOOK_SECRET"
ATTEMPTS_ENV = "DURABLE_AGENTS_WEBHOOK_ATTEMPTS"
FIRST_RETRY_ENV = "DURABLE_AGENTS_WEBHOOK_FIRST_RETRY_SECONDS"
MAX_RETRY_ENV = "DURABLE_AGENTS_WEBHOOK_MAX_RETRY_SECONDS"
TIMEOUT_ENV = "DURABLE_AGENTS_WEBHOOK_TIMEOUT_SECONDS"
POLL_ENV = "DURABLE_AGENTS_WEBHOOK_POLL_SECONDS"


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
    """The delivery pace from the settings (defaults: 8 attempts, 5 s doubling to an hour, 10 s
    per attempt, the run's end looked for after 1 s)."""
    env = os.environ if environ is None else environ
    default = Pace()

    def read(name: str, value: float, low: float, high: float, unit: str, whole: bool = False) -> float:
        found = number_setting(env, name, low=low, high=high, unit=unit, whole=whole)
        return value if found is None else found

    return Pace(
        attempts=int(read(ATTEMPTS_ENV, default.attempts, 1, 50, "attempts", whole=True)),
        first_retry=read(FIRST_RETRY_ENV, default.first_retry, 0.1, 3600, "seconds"),
        max_retry=read(MAX_RETRY_ENV, default.max_retry, 0.1, 86400, "seconds"),
        timeout=read(TIMEOUT_ENV, default.timeout, 0.5, 120, "seconds"),
        poll=read(POLL_ENV, default.poll, 0.1, 60, "seconds"),
    )


def secret_from_env(environ: Mapping[str, str] | None = None) -> bytes | None:
    """The signing secret (UTF-8), or None when unset."""
    raw = (os.environ if environ is None else environ).get(SECRET_ENV, "")
    return raw.encode() if raw.strip() else None
