"""How long a `run` operation may take: a whole-turn deadline, and what is left of its batch's
budget, so that no entity batch outlives the Functions host's `functionTimeout`.

Past `functionTimeout` the Functions host restarts the worker process, and the Durable extension
commits the entity batch it was running as every operation failed, the state unchanged, and does
not run it again: the batch's runs would have no record, and stay pending for ever. A batch holds
up to `maxEntityOperationBatchSize` operations and the SDK runs them one after another, so each
run gets the smaller of the turn deadline and what remains of the batch's budget
(`functionTimeout` less a margin for what follows the turn: recording it, the answer's trip back
to the host); a run that starts with nothing left is recorded as failed `timeout` at once.

A turn of steps (hosting.entity._steps) counts its deadline from when the turn started, across
its steps. A step the batch's budget ends, started late in its batch, is run again in a later
batch instead of failing; one that had a whole batch's budget fails the turn `timeout`, since a
later batch would give it no more time. See docs/hosting.md "Deployment notes".
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agents import FailureCode, failure
from state import TurnFailure

from .._errors import HostingConfigurationError
from .._hub import app_root
from .._settings import (
    DEFAULT_TURN_DEADLINE_SECONDS,
    FUNCTION_TIMEOUT_ENV,
    MAX_TURN_DEADLINE_SECONDS,
    MIN_TURN_DEADLINE_SECONDS,
    TURN_DEADLINE_ENV,
    LimitsSettings,
)

__all__ = [
    "DEFAULT_TURN_DEADLINE_SECONDS", "FUNCTION_TIMEOUT_ENV", "MAX_TURN_DEADLINE_SECONDS",
    "MIN_TURN_DEADLINE_SECONDS", "TURN_DEADLINE_ENV",
]
# DURABLE_AGENTS_TURN_DEADLINE_SECONDS, the most one turn may take (tool rounds and model calls
# together), defaults to three minutes: above one model call's own deadline (120 s), and three
# turns at it fit in the 10 minutes of host.json's functionTimeout less the margin (see
# `maxEntityOperationBatchSize`).
FLEX_FUNCTION_TIMEOUT_SECONDS = 1800.0
"""Flex Consumption's functionTimeout when neither host.json nor the setting names one."""
MARGIN_SECONDS = 60.0
"""What a batch keeps of functionTimeout for the work after its last turn (at most a fifth of it)."""
MARGIN_SHARE = 0.2
FRESH_SLACK_SECONDS = 1.0
"""A step with its batch's budget less at most this (or a twentieth of it) is counted as having
the whole budget: the operations before it in its batch were quick."""
FRESH_SHARE = 0.05


def _time_span(text: str, where: str) -> float | None:
    """A functionTimeout value in seconds: a time span `[d.]hh:mm:ss[.fff]`, or -1 (None: unbounded)."""
    if text.strip() == "-1":
        return None
    match = re.fullmatch(r"(?:(\d+)\.)?(\d{1,2}):(\d{2}):(\d{2}(?:\.\d+)?)", text.strip())
    if match is None or int(match.group(3)) >= 60 or float(match.group(4)) >= 60:
        raise HostingConfigurationError(f"{where} must be a time span like 00:10:00 or -1, not {text!r}")
    days, hours, minutes, seconds = match.groups()
    total = int(days or 0) * 86400 + int(hours) * 3600 + int(minutes) * 60 + float(seconds)
    if total <= 0:
        raise HostingConfigurationError(f"{where} must be longer than zero, not {text!r}")
    return total


def function_timeout(override: str | None, root: Path) -> float | None:
    """The functionTimeout the Functions host applies to this app, in seconds (None: unbounded):
    the app setting that overrides host.json (`override`), else host.json's (deployed with the
    app), else Flex Consumption's default."""
    if override:
        return _time_span(override, FUNCTION_TIMEOUT_ENV)
    value: Any = None
    with contextlib.suppress(OSError, ValueError, AttributeError):
        value = json.loads((root / "host.json").read_text(encoding="utf-8")).get("functionTimeout")
    if value is None:
        return FLEX_FUNCTION_TIMEOUT_SECONDS
    return _time_span(str(value), "host.json functionTimeout")


@dataclass(frozen=True)
class TimeLimits:
    """The time limits of an agent entity's run operations."""

    turn_deadline: float = DEFAULT_TURN_DEADLINE_SECONDS
    function_timeout: float | None = FLEX_FUNCTION_TIMEOUT_SECONDS

    @property
    def batch_budget(self) -> float | None:
        """How long a batch's runs may take together (None: no bound but each turn's deadline)."""
        if self.function_timeout is None:
            return None
        return self.function_timeout - min(MARGIN_SECONDS, self.function_timeout * MARGIN_SHARE)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, root: Path | None = None) -> TimeLimits:
        """The limits from the app settings in `environ` (default: the environment, now) and
        host.json."""
        return cls.from_settings(LimitsSettings.load(environ), root)

    @classmethod
    def from_settings(cls, settings: LimitsSettings, root: Path | None = None) -> TimeLimits:
        """The limits from the settings `build_app` read and host.json (read at startup: a value
        out of range stops the app, naming it)."""
        timeout = function_timeout(settings.function_timeout, app_root() if root is None else root)
        return cls(turn_deadline=settings.turn_deadline, function_timeout=timeout)


_batch_ends: ContextVar[float | None] = ContextVar("dafx_batch_ends", default=None)
"""When the running batch's budget ends (`time.monotonic()`), None: unbounded or not in a batch."""


@contextlib.contextmanager
def batch_clock(limits: TimeLimits) -> Iterator[None]:
    """The batch starts now: its run operations share its budget (the SDK runs them in this thread)."""
    budget = limits.batch_budget
    token = _batch_ends.set(None if budget is None else time.monotonic() + budget)
    try:
        yield
    finally:
        _batch_ends.reset(token)


def run_deadline(limits: TimeLimits) -> float:
    """The seconds the run operation starting now may take: its turn deadline, or what is left of
    its batch's budget when that is less (0 or less: none left)."""
    ends = _batch_ends.get()
    if ends is None:
        return limits.turn_deadline
    return min(limits.turn_deadline, ends - time.monotonic())


def timeout_failure(limits: TimeLimits, deadline: float, batch_bound: bool | None = None) -> TurnFailure:
    """The failure of a run that had `deadline` seconds and did not finish: its turn deadline, or
    (`batch_bound`, by default when `deadline` is less than it) what was left of its batch's budget."""
    by_batch = deadline < limits.turn_deadline if batch_bound is None else batch_bound
    if not by_batch or limits.function_timeout is None:
        why = f"its deadline of {limits.turn_deadline:g} s ({TURN_DEADLINE_ENV})"
    else:
        why = (
            f"the {max(deadline, 0):.1f} s left of its entity batch's time, which ends before "
            f"the host's functionTimeout ({limits.function_timeout:g} s)"
        )
    return failure(
        FailureCode.TIMEOUT,
        f"the turn did not finish within {why}; only the failure was recorded: send the turn "
        "again as a new run",
        retryable=True,
    )


@dataclass(frozen=True)
class StepTime:
    """What one step of a turn of steps may take (hosting.entity._steps)."""

    seconds: float
    """The smaller of what is left of the turn's deadline and of its batch's budget."""
    turn_left: float
    """What is left of the turn's deadline, counted from when the turn started."""

    fresh: bool = True
    """The step starts with (nearly) a whole batch's budget: a later batch would give it no more."""

    @property
    def batch_bound(self) -> bool:
        """The batch's budget, not the turn's deadline, is what ends the step."""
        return self.seconds < self.turn_left

    @property
    def deferrable(self) -> bool:
        """A step the batch's budget ends, started late in its batch: it is run again in a later
        batch, with that batch's whole budget, rather than failed (the turn still has time)."""
        return self.batch_bound and not self.fresh


def step_time(limits: TimeLimits, started_at: str, now: datetime | None = None) -> StepTime:
    """The time of a step starting now, in a turn that started at `started_at` (ISO 8601)."""
    try:
        started = datetime.fromisoformat(started_at)
    except ValueError:
        started = None
    current = datetime.now(UTC) if now is None else now
    if started is None or started.tzinfo is None:
        elapsed = 0.0  # an unreadable start is counted from now: the turn keeps its whole deadline
    else:
        elapsed = max((current - started).total_seconds(), 0.0)
    turn_left = limits.turn_deadline - elapsed
    budget, ends = limits.batch_budget, _batch_ends.get()
    if budget is None or ends is None:
        return StepTime(turn_left, turn_left)
    batch_left = ends - time.monotonic()
    fresh = batch_left >= budget - max(FRESH_SLACK_SECONDS, budget * FRESH_SHARE)
    return StepTime(min(turn_left, batch_left), turn_left, fresh)
