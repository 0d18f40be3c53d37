"""The file chunk store's id -> file name mapping: injective whatever the file system folds (macOS
and Windows ignore case), and stores written with the earlier, case-preserving layout still read."""

from __future__ import annotations

import pathlib
import random
import string

from hosting.archive._store import FileChunkStore, chunk_path, file_name, segment_of, session_prefix

EPOCH = "0123456789abcdef"


def test_the_mapping_is_injective_under_case_folding_and_reversible() -> None:
    segments = {"s-Alice", "s-alice", "s-ALICE", "s-aLiCe", "s-a%2Fb", "s-a%2fb", "s-a%252Fb", "dafx-x",
                "00000001-" + "ab" * 32, "s-~._-"}
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits + "._~%-"
    segments |= {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(5000)}
    names = {s: file_name(s) for s in segments}
    assert len({n.casefold() for n in names.values()}) == len(segments)
    assert all(n == n.lower() for n in names.values())  # nothing left for a file system to fold
    assert all(segment_of(n) == s for s, n in names.items())


async def test_sessions_differing_in_case_get_folders_a_case_insensitive_system_keeps_apart(
    tmp_path: pathlib.Path,
) -> None:
    store = FileChunkStore(tmp_path)
    for key in ("Alice", "alice", "ALICE"):
        await store.put(chunk_path("dafx-a", key, EPOCH, f"00000000-{key}"), key.encode())
    folders = [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_dir()]
    assert len({f.casefold() for f in folders}) == len(folders), folders
    for key in ("Alice", "alice", "ALICE"):
        assert await store.list_paths(session_prefix("dafx-a", key)) == [
            chunk_path("dafx-a", key, EPOCH, f"00000000-{key}")
        ]


async def test_chunks_written_with_the_earlier_layout_stay_readable(tmp_path: pathlib.Path) -> None:
    # The earlier layout: the chunk path itself, letters as they are.
    old = chunk_path("dafx-a", "Alice", EPOCH, "00000000-aa")
    (tmp_path / old).parent.mkdir(parents=True)
    (tmp_path / old).write_bytes(b"archived before")
    store = FileChunkStore(tmp_path)
    assert await store.get(old) == b"archived before"
    new = chunk_path("dafx-a", "Alice", EPOCH, "00000001-bb")
    await store.put(new, b"archived after")
    assert await store.list_paths(session_prefix("dafx-a", "Alice")) == [old, new]
    # Another session whose id differs only in case never sees them.
    assert await store.list_paths(session_prefix("dafx-a", "alice")) == []
    assert await store.get(chunk_path("dafx-a", "alice", EPOCH, "00000000-aa")) is None
    await store.delete(old)
    assert await store.get(old) is None
    assert await store.list_paths(session_prefix("dafx-a", "Alice")) == [new]
