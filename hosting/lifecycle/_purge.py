"""Purging the lifecycle's finished instances: every expiry check and cleanup leaves an instance
and its history in the task hub (on Azure Storage an Instances row and about eight History rows),
which nothing reads again. The sweep (hosting.lifecycle._sweeper) purges the finished ones of its
agent, found by the instance query by id prefix (`hosting.client.query_instances`).

Only finished instances go (`Completed`, `Failed`, `Terminated`): a running check or cleanup
still has work queued, and an expiry watcher of an earlier version (a running
`dafx-expiry-...` instance that sleeps until its session is due) must keep its timer.
"""

from __future__ import annotations

import logging

from ..client import ContinuationRefused, DurableClient, query_instances
from ._ended import ended_prefix
from ._names import approval_prefix, cleanup_prefix, expiry_prefix

log = logging.getLogger("hosting.lifecycle")

FINISHED = ("Completed", "Failed", "Terminated")
MAX_PURGES_PER_SWEEP = 1000
"""At most this many instances purged per sweep and agent (the next sweep purges the rest)."""
_PAGE = 100


async def purge_finished(client: DurableClient, agent: str) -> int:
    """Purge the finished expiry checks, cleanups, session-end runs and approval expiries of
    `agent`; answer how many went."""
    purged = 0
    for prefix in (expiry_prefix(agent), cleanup_prefix(agent), ended_prefix(agent), approval_prefix(agent)):
        purged += await _purge_prefix(client, prefix, MAX_PURGES_PER_SWEEP - purged)
    if purged:
        log.info("sweep of %s: %d finished instance(s) purged", agent, purged)
    return purged


async def _purge_prefix(client: DurableClient, prefix: str, budget: int) -> int:
    purged, token = 0, None
    while purged < budget:
        try:
            items, token = await query_instances(
                client, prefix, top=min(_PAGE, budget - purged), continuation=token, runtime_status=FINISHED
            )
        except ContinuationRefused:
            break  # the next sweep starts again at the first page
        for item in items:
            instance_id = item.get("instanceId")
            # The backend filters by status already; checked again because purging a running
            # instance would take its queued work (and a watcher's timer) with it.
            if not (isinstance(instance_id, str) and item.get("runtimeStatus") in FINISHED):
                continue
            try:
                await client.purge_instance_history(instance_id)
            except Exception as error:  # one refused purge does not stop the others
                log.warning("purge of %s failed: %s", instance_id, error)
                continue
            purged += 1
        if not token:
            break
    return purged
