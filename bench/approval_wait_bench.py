"""Entity batches a waiting orchestration costs per hour of a pause for approval.

An orchestration's `yield from get_agent(context, name).run(...)` whose turn pauses reads the
run with the entity's `run_status` operation after each durable timer (hosting._orchestration).
Each read is an entity batch, which on Azure Storage rewrites the entity's whole state. This
drives the real `AgentHandle.run` generator on a virtual clock through a pause nobody decides
(it expires after DURABLE_AGENTS_APPROVAL_TIMEOUT_SECONDS, a day by default) and counts the
`run_status` calls per hour: the first hour, the steady hours after it, and the day. The timers
are the orchestration's own; no time passes for real.

`--root` imports `hosting` from another checkout (`git archive <commit> | tar -x -C DIR`), so the
code before a change can be measured the same way.

Usage: .venv/bin/python bench/approval_wait_bench.py [--hours 24] [--root DIR]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent


@dataclass(eq=False)
class Task:
    """What the virtual context hands the orchestrator for each durable action."""

    kind: str
    fire_at: datetime | None = None
    children: list[Task] = field(default_factory=list)

    def cancel(self) -> None:
        """A timer the orchestrator no longer needs (after an event won)."""


class VirtualContext:
    """The `OrchestrationContext` the helpers use, on a clock that moves to each timer."""

    instance_id = "bench-orchestration"

    def __init__(self, start: datetime) -> None:
        self.current_utc_datetime = start
        self._uuids = 0
        self.signals: list[str] = []

    def new_uuid(self) -> str:
        self._uuids += 1
        return f"00000000-0000-4000-8000-{self._uuids:012d}"

    def create_timer(self, fire_at: datetime) -> Task:
        return Task("timer", fire_at)

    def wait_for_external_event(self, name: str) -> Task:
        return Task("event")

    def task_any(self, activities: list[Task]) -> Task:
        return Task("any", children=activities)

    def call_entity(self, entityId: Any, operationName: str, operationInput: Any = None) -> Task:
        return Task(operationName)

    def signal_entity(self, entityId: Any, operationName: str, operationInput: Any = None) -> None:
        self.signals.append(operationName)


def measure(hours: float, timeout: float) -> tuple[Counter[int], int]:
    """`run_status` calls per hour of a pause of `timeout` seconds nobody decides (watched for
    `hours` at most), and how many entity operations the wait sent in all."""
    from agents import TurnResult
    from hosting import get_agent

    start = datetime(2026, 1, 1, tzinfo=UTC)
    context = VirtualContext(start)
    due = start + timedelta(seconds=timeout)
    run = get_agent(context, "bench").run("book it", session_id="bench-session")
    paused: dict[str, Any] = {
        "correlationId": "", "status": "awaiting_approval", "step": 1, "seconds": timeout,
        "dueAt": due.isoformat(),
        "approvals": [{"callId": "call-1", "name": "book_hotel", "arguments": {}, "step": 1,
                       "requestedAt": start.isoformat()}],
    }
    reads: Counter[int] = Counter()
    sent: Any = None
    end = start + timedelta(hours=hours)
    try:
        while True:
            task: Task = run.send(sent)
            if task.kind == "run":
                paused["correlationId"] = context.new_uuid()
                sent = paused
            elif task.kind in ("timer", "any"):
                timer = task if task.kind == "timer" else next(c for c in task.children if c.kind == "timer")
                assert timer.fire_at is not None
                context.current_utc_datetime = max(context.current_utc_datetime, timer.fire_at)
                sent = timer  # nobody decides: no event ever comes
            elif task.kind == "run_status":
                now = context.current_utc_datetime
                reads[int((now - start).total_seconds() // 3600)] += 1
                expired = "expire_approvals" in context.signals or now >= end
                sent = TurnResult(paused["correlationId"], "succeeded").to_json() if expired else paused
    except StopIteration:
        pass
    return reads, sum(reads.values()) + len(context.signals)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=25.0, help="how long to watch at most")
    parser.add_argument("--timeout", type=float, default=86400.0, help="the approval timeout (seconds)")
    parser.add_argument("--root", type=pathlib.Path, default=ROOT, help="the checkout to import hosting from")
    args = parser.parse_args()
    sys.path.insert(0, str(args.root.resolve()))
    import hosting

    reads, operations = measure(args.hours, args.timeout)
    hours = max(reads) + 1 if reads else 0
    steady = [reads[h] for h in range(1, min(hours, int(args.timeout // 3600)))]  # before it is due
    print(f"hosting from {pathlib.Path(hosting.__file__).parent}")
    print(f"pause of {args.timeout:g} s, nobody decides (it expires), {hours} h")
    low, high = min(steady, default=0), max(steady, default=0)
    total = sum(reads.values())
    print(f"run_status batches: first hour {reads[0]}, each later hour {low}-{high}, in all {total}")
    print(f"entity operations of the wait in all (the expiry's signal too): {operations}")


if __name__ == "__main__":
    main()
