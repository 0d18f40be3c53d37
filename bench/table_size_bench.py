"""What a session's stored state weighs against Azure Storage's table limits, turn by turn.

On the Azure Storage backend an entity's state is a property of a table row, and a property over
about 60 KB of UTF-16 (DTFx's Azure Storage provider stores strings as UTF-16 and moves larger
values to blob storage: three more storage calls each time the state is written and read) is
offloaded. This builds sessions turn by turn with the state package's archiving, for the default
policy and for smaller ones (`DURABLE_AGENTS_ARCHIVE_AT_BYTES` / `_KEEP_BYTES`), and prints, per
policy, the stored state's size per turn (UTF-8, and UTF-16 as the table stores it), the share of
turns whose state would be offloaded, and the chunks written per 100 turns.

Usage: .venv/bin/python bench/table_size_bench.py [--turns 400]
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from state_bench import _request, _response  # noqa: E402

from state import AgentState, ArchivePolicy, apply_archive, dump_state, plan_archive  # noqa: E402

TABLE_PROPERTY_LIMIT = 60 * 1024
"""Bytes of UTF-16 above which the provider moves a property to blob storage."""
POLICIES = ((40 * 1024, 16 * 1024), (20 * 1024, 8 * 1024), (16 * 1024, 6 * 1024))


def run(archive_at: int, keep: int, turns: int) -> str:
    policy = ArchivePolicy(max_state_bytes=archive_at, keep_bytes=keep)
    state = AgentState.new()
    utf8: list[int] = []
    utf16: list[int] = []
    chunks = 0
    for turn in range(turns):
        state.append_request(_request(turn))
        state.append_response(_response(turn))
        plan = plan_archive(state, policy)
        if plan is not None:
            apply_archive(state, plan, policy)
            chunks += len(plan.chunks)
        text = dump_state(state)
        utf8.append(len(text.encode("utf-8")))
        utf16.append(len(text.encode("utf-16-le")))
    offloaded = sum(1 for size in utf16 if size > TABLE_PROPERTY_LIMIT) / turns
    return (
        f"archive at {archive_at // 1024:>2} KiB, keep {keep // 1024:>2} KiB: state UTF-8 p50 "
        f"{statistics.median(utf8) / 1024:5.1f} KB max {max(utf8) / 1024:5.1f} KB, UTF-16 max "
        f"{max(utf16) / 1024:6.1f} KB; offloaded to blob on {offloaded:6.1%} of turns; "
        f"{chunks * 100 / turns:4.1f} chunks written per 100 turns"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=400)
    args = parser.parse_args()
    for archive_at, keep in POLICIES:
        print(run(archive_at, keep, args.turns), flush=True)


if __name__ == "__main__":
    main()
