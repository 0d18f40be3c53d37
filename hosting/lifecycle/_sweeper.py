"""Idle expiry by one sweeper per agent, instead of a watcher orchestration per session.

`dafx_session_sweeper` (instance `dafx-sweeper-{agent}`) is an eternal orchestration: its
`dafx_sweep_sessions` activity asks the entity query for the agent's sessions whose last
operation is at least one TTL old (`lastOperationTimeTo`, so the cost follows the idle sessions,
not all of them), starts a one-shot `dafx_session_expiry` check for each (the entity decides, and
the archive goes after its commit: hosting.lifecycle._expiry), and answers how long to sleep; the
orchestration sleeps on a durable timer and continues as new.

A session therefore costs nothing at its creation: the request path only makes sure, once per
process and agent, that the sweepers run (`ensure_sweepers`). A session expires at the first
sweep after it has been idle for its TTL: up to one sweep interval late, `TTL / 20` clamped to
0.2 s .. 1 h (30 days: hourly). The sweep pages through at most `MAX_CHECKS_PER_SWEEP` sessions
and hands the query's continuation token on as a cursor: the next sweep starts where this one
stopped, and the one after the last page starts again at the first. So sessions that never
expire (an unreadable state is kept as it is) cost one check per round, and cannot keep the
sessions behind them from ever being reached. The cursor is kept in the sweeper's own input
(`continue_as_new`), which survives restarts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Generator, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import azure.durable_functions as df

from .._ids import entity_name
from ..client import ContinuationRefused, DurableClient, entity_key, query_entities, rpc_base_url
from ._names import EXPIRY, SWEEP, SWEEPER, expiry_instance, sweeper_instance
from ._purge import purge_finished
from ._ttl import ttl_for

log = logging.getLogger("hosting.lifecycle")

MIN_INTERVAL = timedelta(seconds=0.2)
MAX_INTERVAL = timedelta(hours=1)
MAX_CHECKS_PER_SWEEP = 1000
_PAGE = 100
# How often one process makes sure again that the sweepers run (one that failed, or was purged,
# is started again by the next request after this).
_ENSURE_EVERY_SECONDS = 3600.0
_ensured: dict[tuple[str, str], float] = {}  # (the backend's rpcBaseUrl, agent) -> when


def sweep_interval(ttl: timedelta) -> timedelta:
    """How long the sweeper of sessions with this TTL sleeps between sweeps."""
    return min(max(ttl / 20, MIN_INTERVAL), MAX_INTERVAL)


def sweeper_orchestrator(context: df.DurableOrchestrationContext) -> Generator[Any, Any, str]:
    """Sweep the agent's idle sessions from the cursor on, sleep one interval, continue as new
    with the cursor the sweep answered (ends for TTL never)."""
    spec = context.get_input()
    interval = float(spec.get("intervalSeconds") or MAX_INTERVAL.total_seconds())
    cursor = spec.get("cursor")
    try:
        answer = yield context.call_activity(SWEEP, {"agent": spec["agent"], "cursor": cursor})
    except Exception as error:  # a failed sweep is tried again after the interval
        if not context.is_replaying:
            log.warning("sweep of %s failed: %s", spec["agent"], error)
    else:
        if isinstance(answer, dict):
            if answer.get("intervalSeconds") is None:
                return "never"
            interval = float(answer["intervalSeconds"])
            cursor = answer.get("cursor")
    yield context.create_timer(context.current_utc_datetime + timedelta(seconds=interval))
    # The cursor lives in the sweeper's own input, the durable state it keeps across restarts.
    context.continue_as_new({"agent": spec["agent"], "intervalSeconds": interval, "cursor": cursor})
    return "sleeping"


async def sweep_activity(spec: dict[str, Any], client: DurableClient) -> dict[str, Any]:
    """Start an expiry check for each of the agent's sessions idle for its TTL, from the cursor
    on; answer the interval until the next sweep (None: the TTL is never, the sweeper ends), how
    many were checked and the cursor of the next sweep (None: start again at the first page)."""
    agent = spec["agent"]
    ttl = ttl_for(agent)
    if ttl is None:
        return {"intervalSeconds": None, "checked": 0, "cursor": None}
    idle_since = datetime.now(UTC) - ttl
    token = spec.get("cursor") if isinstance(spec.get("cursor"), str) else None
    checked = 0
    while checked < MAX_CHECKS_PER_SWEEP:
        try:
            items, token = await query_entities(
                client, entity_name(agent), top=_PAGE, continuation=token, operated_before=idle_since
            )
        except ContinuationRefused:  # only ever raised for a token
            # A backend may let a stored token expire: this round starts again at the first page.
            log.info("sweep of %s: the cursor was refused; starting at the first page", agent)
            token = None
            continue
        for session in [key for key in map(entity_key, items) if key is not None]:
            check = {"agent": agent, "session": session, "once": True}
            try:
                await client.start_new(EXPIRY, expiry_instance(agent, session), check)
            except Exception as error:  # a check already under way decides
                log.info("expiry check of %s@%s not started: %s", agent, session, error)
            checked += 1
        if not token:
            break
    if checked:
        log.info("sweep of %s: %d idle session(s) checked", agent, checked)
    try:
        purged = await purge_finished(client, agent)
    except Exception as error:  # the checks were started: their cursor must not be lost
        log.warning("sweep of %s: purging finished instances failed: %s", agent, error)
        purged = 0
    return {
        "intervalSeconds": sweep_interval(ttl).total_seconds(),
        "checked": checked,
        "purged": purged,
        "cursor": token,
    }


async def ensure_sweepers(client: DurableClient, agents: Iterable[str]) -> None:
    """Make sure the expiry sweepers of `agents` run: once per process and agent (and again an
    hour later), a start that the backend refuses while the sweeper is already running."""
    now = time.monotonic()
    backend = rpc_base_url(client) or ""
    for agent in agents:
        last = _ensured.get((backend, agent))
        if last is not None and now - last < _ENSURE_EVERY_SECONDS:
            continue
        _ensured[(backend, agent)] = now
        ttl = ttl_for(agent)
        if ttl is None:
            continue
        spec = {"agent": agent, "intervalSeconds": sweep_interval(ttl).total_seconds()}
        try:
            await client.start_new(SWEEPER, sweeper_instance(agent), spec)
        except Exception as error:  # already running (the usual case), or refused
            log.debug("expiry sweeper of %s not started: %s", agent, error)


def sweepers_of(agents: Sequence[str]) -> Callable[[DurableClient], Awaitable[None]]:
    """What a new session is due: making sure the expiry sweepers of `agents` run."""
    names = list(agents)

    async def ensure(client: DurableClient) -> None:
        await ensure_sweepers(client, names)

    return ensure
