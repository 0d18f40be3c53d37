"""Benchmark: a turn's long-term memory lookup on each store, SQLite and Azure Table Storage.

Times what `UserMemoryProvider` does for one user on a turn: `before_model` (the facts sharing the
request's words, then the newest, into the instructions: one or two searches) and the `recall`
tool (one search), with 10 and with 1,000 items in the user's namespace, on the embedded SQLite
store and on the Table store against Azurite (started here from `.tools/`, as the tests start it,
on free ports with a temporary `--location`). The two stores are timed in alternation, lookup by
lookup, so the machine's drift hits both alike. Prints p50 and p99 in ms and the load average.

Azurite is an emulator on this machine, not Azure: on Azure every lookup is a network round trip
to the storage account (a few ms within a region) and a 1,000-item partition is read in pages of
up to 1,000 entities. Run: `.venv/bin/python bench/memory_lookup_bench.py [--runs N]`.

`--embeddings`: instead, on SQLite, the lookup by similarity beside the lookup by keywords (what
the provider does without an embedding model), timed in alternation: the turn's first
`before_model` (the request embedded over HTTP by the local `ModelServer`, whose deterministic
vectors cost about what a loopback JSON answer costs, not what a model's do: a real embedding
call adds its network round trip and the model's time) and a later step's (the vector kept in the
turn's state), with the items embedded in `--dimensions` (default 1,536: text-embedding-3-small).
Prints the embedding calls each lookup made.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents import (  # noqa: E402 - the repository root is not on sys.path
    OpenAIEmbedder,
    ProviderContext,
    close_model_clients,
)
from agents._settings import Endpoint  # noqa: E402
from agents.memory import (  # noqa: E402
    MemoryNamespace,
    MemoryStore,
    SqliteMemoryStore,
    TableConnection,
    TableMemoryStore,
    UserMemoryProvider,
)
from agents.testing import ModelServer, hashed_embedding  # noqa: E402
from state import ChatMessage, TextContent  # noqa: E402

AZURITE = ROOT / ".tools" / "node_modules" / ".bin" / "azurite-table"
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
REQUEST = "Book me a window seat to Lisbon in May, and a hotel near the river."
WORDS = ["seat", "hotel", "Lisbon", "tea", "jazz", "May", "river", "museum", "train", "vegan"]


def _fact(n: int) -> str:
    return f"Fact {n}: the traveller likes {WORDS[n % len(WORDS)]} and {WORDS[(n * 7) % len(WORDS)]}."


def _context(user: str, correlation_id: str = "c") -> ProviderContext:
    message = ChatMessage(role="user", contents=[TextContent(text=REQUEST)])
    return ProviderContext(
        agent_name="concierge", correlation_id=correlation_id, state=None, request_messages=[message],
        history=[], user_id=user,
    )


def _azurite(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [str(AZURITE), "--tableHost", "127.0.0.1", "--tablePort", str(port), "--location", str(folder),
         "--disableTelemetry", "--skipApiVersionCheck", "--silent"],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("azurite-table did not start") from None
            time.sleep(0.1)
    connection = (
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
        f"TableEndpoint=http://127.0.0.1:{port}/{ACCOUNT};"
    )
    return process, connection


async def _timed(call: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1000


def _p(times: list[float], share: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def _lookup(provider: UserMemoryProvider, ctx: ProviderContext, path: str) -> Callable[[], Awaitable[object]]:
    if path.startswith("before_model"):
        return lambda: provider.before_model(ctx)
    return lambda: provider.recall(ctx, "Lisbon hotel")


async def _measure(stores: dict[str, MemoryStore], runs: int) -> None:
    providers = {name: UserMemoryProvider(store=store) for name, store in stores.items()}
    for size in (10, 1_000):
        user = f"u{size}"
        for store in stores.values():
            for n in range(size):
                await store.put(MemoryNamespace(user), _fact(n))
        ctx = _context(user)
        for path in ("before_model (instructions)", "recall tool"):
            calls: dict[str, Callable[[], Awaitable[object]]] = {
                name: _lookup(provider, ctx, path) for name, provider in providers.items()
            }
            times: dict[str, list[float]] = {name: [] for name in stores}
            for call in calls.values():  # warm up: clients, connections, the table
                await call()
            for _ in range(runs):
                for name, call in calls.items():
                    times[name].append(await _timed(call))
            for name, samples in times.items():
                print(
                    f"{name:<16} {size:>5} items  {path:<28} p50 {statistics.median(samples):7.2f}  "
                    f"p99 {_p(samples, 0.99):7.2f}"
                )


async def _measure_embeddings(folder: Path, runs: int, dimensions: int) -> None:
    store = SqliteMemoryStore(folder / "embedded.db", max_items=1_000)
    with ModelServer() as server:
        endpoint = Endpoint("openai", "bench-embedding", server.base_url, "k")
        providers = {
            "keywords": UserMemoryProvider(store=store, embedder=None),
            "embeddings": UserMemoryProvider(
                store=store, embedder=OpenAIEmbedder(endpoint, dimensions=dimensions)
            ),
        }
        for size in (10, 1_000):
            for name in providers:
                user = f"{name}{size}"
                for n in range(size):
                    text = _fact(n)
                    vector = hashed_embedding(text, dimensions) if name == "embeddings" else None
                    await store.put(MemoryNamespace(user), text, embedding=vector)
            for step in ("first step", "later step"):
                times: dict[str, list[float]] = {name: [] for name in providers}
                calls: dict[str, int] = dict.fromkeys(providers, 0)
                for run in range(runs + 1):
                    for name, provider in providers.items():
                        # A new turn each time: its request is embedded on its first step; a later
                        # step finds the vector the first left in the turn's state.
                        ctx = _context(f"{name}{size}", f"turn-{run}")
                        if step == "later step":
                            await provider.before_model(ctx)
                        before = len(server.embedding_requests)
                        elapsed = await _timed(functools.partial(provider.before_model, ctx))
                        if run:  # the first is a warm-up
                            times[name].append(elapsed)
                            calls[name] += len(server.embedding_requests) - before
                for name, samples in times.items():
                    print(
                        f"SQLite {name:<11} {size:>5} items  before_model, {step:<11} "
                        f"p50 {statistics.median(samples):7.2f}  p99 {_p(samples, 0.99):7.2f}  "
                        f"embedding calls/lookup {calls[name] / runs:.2f}"
                    )
        await close_model_clients()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="lookups per store, size and path")
    parser.add_argument("--embeddings", action="store_true", help="similarity beside keywords, SQLite")
    parser.add_argument("--dimensions", type=int, default=1_536, help="embedding length (--embeddings)")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f}; {args.runs} lookups each; ms")
    if args.embeddings:
        with tempfile.TemporaryDirectory() as folder:
            await _measure_embeddings(Path(folder), args.runs, args.dimensions)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        return
    with tempfile.TemporaryDirectory() as folder:
        process, connection = _azurite(Path(folder) / "azurite")
        account = TableConnection(connection_string=connection)
        table = TableMemoryStore(account, "benchMemory", max_items=1_000)
        try:
            stores: dict[str, MemoryStore] = {
                "SQLite": SqliteMemoryStore(Path(folder) / "memory.db", max_items=1_000),
                "Table (Azurite)": table,
            }
            await _measure(stores, args.runs)
        finally:
            await table.close()
            process.terminate()
            process.wait(10)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
