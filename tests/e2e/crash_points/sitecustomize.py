"""The long-session tests' kill switch, kept out of the product: a host started with this folder
on `PYTHONPATH` and `DURABLE_AGENTS_CRASH_AT` set imports this module at interpreter start in
every one of its processes (the host and each worker it spawns inherit the environment), and it
wraps the archive's chunk writing so that the process group is killed (SIGKILL, as a power cut
stops a whole instance) at that point:

* `archive-before-chunk`: after the orphans are deleted, before the first chunk is stored;
* `archive-after-chunk`: once every chunk of the plan is stored, before the state is saved.
"""

from __future__ import annotations

import os
import signal
import sys

CRASH_ENV = "DURABLE_AGENTS_CRASH_AT"
POINTS = ("archive-before-chunk", "archive-after-chunk")


def _kill(point: str) -> None:
    print(f"crash point {point}: killing the process group", file=sys.stderr, flush=True)
    os.killpg(os.getpgrp(), signal.SIGKILL)


def _install(point: str) -> None:
    from typing import Any

    from hosting.archive import HistoryArchive

    store_plan = HistoryArchive._store_plan

    async def crashing_store_plan(self: HistoryArchive, *args: Any) -> None:
        if point == "archive-before-chunk":
            async def put(path: str, data: bytes) -> None:
                _kill(point)

            self.store.put = put  # type: ignore[method-assign]
        await store_plan(self, *args)
        _kill(point)

    HistoryArchive._store_plan = crashing_store_plan  # type: ignore[method-assign,assignment]


_point = os.environ.get(CRASH_ENV)
if _point:
    if _point not in POINTS:
        raise SystemExit(f"{CRASH_ENV} must be one of {POINTS}, not {_point!r}")
    _install(_point)
