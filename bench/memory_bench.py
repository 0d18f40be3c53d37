"""Benchmark: what a user's long-term memory adds to a turn.

Prints the time of `UserMemoryProvider.before_model` (the lookup every turn of a session with a
user makes: the facts sharing the request's words, then the newest) on the embedded SQLite store,
p50 and p95 over the runs, with 10 and 1,000 items in the user's namespace, beside the per-session
`MemoryProvider.before_model` with 10 and 100 facts (its limit) in the state bag, measured in the
same run. Embedding calls per turn: none (the provider searches by keywords; no embedding model
is wired in). Run: `.venv/bin/python bench/memory_bench.py`. The machine is shared, so the load
average is printed alongside: figures drift with it.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents import MemoryProvider, ProviderContext  # noqa: E402 - the repository root is not on sys.path
from agents._memory import Fact, MemoryState  # noqa: E402
from agents.memory import MemoryNamespace, SqliteMemoryStore, UserMemoryProvider  # noqa: E402
from state import ChatMessage, TextContent  # noqa: E402

RUNS = 200
REQUEST = "Book me a window seat to Lisbon in May, and a hotel near the river."
WORDS = ["seat", "hotel", "Lisbon", "tea", "jazz", "May", "river", "museum", "train", "vegan"]


def _fact(n: int) -> str:
    return f"Fact {n}: the traveller likes {WORDS[n % len(WORDS)]} and {WORDS[(n * 7) % len(WORDS)]}."


def _context(user: str | None, state: MemoryState | None) -> ProviderContext:
    message = ChatMessage(role="user", contents=[TextContent(text=REQUEST)])
    return ProviderContext(
        agent_name="concierge", correlation_id="c", state=state, request_messages=[message], history=[],
        user_id=user,
    )


async def _timed(call: object, runs: int = RUNS) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        await call()  # type: ignore[operator]
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


async def main() -> None:
    print(f"load average: {os.getloadavg()[0]:.2f}; {RUNS} runs each; ms per turn")
    with tempfile.TemporaryDirectory() as folder:
        store = SqliteMemoryStore(Path(folder) / "memory.db", max_items=1_000)
        provider = UserMemoryProvider(store=store)
        for size in (10, 1_000):
            user = f"u{size}"
            for n in range(size):
                await store.put(MemoryNamespace(user), _fact(n))
            ctx = _context(user, None)
            p50, p95 = await _timed(lambda ctx=ctx: provider.before_model(ctx))
            print(f"UserMemoryProvider (SQLite), {size:>5} items: p50 {p50:6.2f}  p95 {p95:6.2f}")
    session = MemoryProvider()
    for size in (10, 100):
        state = MemoryState(facts=[Fact(id=f"m{n}", text=_fact(n)) for n in range(size)])
        ctx = _context(None, state)
        p50, p95 = await _timed(lambda ctx=ctx: session.before_model(ctx))
        print(f"MemoryProvider (per session), {size:>3} facts: p50 {p50:6.2f}  p95 {p95:6.2f}")


if __name__ == "__main__":
    asyncio.run(main())
