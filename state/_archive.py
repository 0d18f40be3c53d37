"""(1.3.0) Archived history: which entries leave the state, the chunks they go to, and reading
those chunks back. No IO here: hosting stores and fetches the chunk bytes this module makes.

A session's state keeps the header, the state bag, the runs of the entries it holds, the most
recent entries and `data.archive`: the archive's epoch, how many entries were archived, the
references of the most recent chunks (oldest first) and the run records of the most recent
archived runs. Every chunk also names the chunk before it, so older chunks stay reachable when
their references leave the state. A chunk's name is its sequence number and the sha256 of its
bytes, so it is immutable and checked on every read.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ._check import _chunk_ref_ok, _entry_ok
from ._errors import StateError
from ._state import AgentState, replay_turns
from ._versions import CURRENT_SCHEMA_VERSION
from ._wire import CHUNK_NAME_PATTERN, EPOCH_PATTERN, Doc

CHUNK_FORMAT = "durable-agent-history-chunk"
"""The `format` of every chunk document."""

_CHUNK_NAME = re.compile(CHUNK_NAME_PATTERN)
_EPOCH = re.compile(EPOCH_PATTERN)


class HistoryUnavailable(StateError):
    """An archived chunk the history needs is missing or does not hold what its name promises.

    `chunk` names it; nothing that read it changed anything.
    """

    def __init__(self, chunk: str, reason: str) -> None:
        super().__init__(f"archived history chunk {chunk!r} is unavailable: {reason}")
        self.chunk = chunk
        self.reason = reason


@dataclass(frozen=True, slots=True)
class ChunkRef:
    """A reference to one archived chunk: its name, the absolute index of its first entry and
    how many entries it holds."""

    name: str
    first: int
    count: int
    bytes: int = 0

    @property
    def sequence(self) -> int:
        """The chunk's sequence number in its archive (0 for the first chunk)."""
        return int(self.name[:8])

    @property
    def end(self) -> int:
        """The absolute index just after the chunk's last entry."""
        return self.first + self.count

    def to_json(self) -> Doc:
        """The reference as stored (in `data.archive.chunks` and a chunk's `previous`)."""
        return {"name": self.name, "first": self.first, "count": self.count, "bytes": self.bytes}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> ChunkRef:
        """A stored reference (already validated)."""
        return cls(raw["name"], raw["first"], raw["count"], raw.get("bytes") or 0)


@dataclass(frozen=True, slots=True)
class ArchiveInfo:
    """`data.archive` of a state: epoch, archived entry count, recent chunk refs (oldest first)."""

    epoch: str
    archived_entries: int
    chunks: tuple[ChunkRef, ...]

    @property
    def next_sequence(self) -> int:
        """The sequence number the next chunk gets."""
        return self.chunks[-1].sequence + 1 if self.chunks else 0


@dataclass(frozen=True, slots=True)
class ArchivedRun:
    """A finished run whose entries were archived: absolute indexes, status and request hash."""

    status: str
    request_index: int | None
    response_index: int
    request_hash: str | None


@dataclass(frozen=True)
class ArchivePolicy:
    """When and how much of a state's history is archived (sizes are UTF-8 bytes of the entries).

    When the entries in the state exceed `max_state_bytes`, the oldest complete turns move out
    until about `keep_bytes` remain (never the latest turn, never half a turn), in chunks of up
    to `max_chunk_bytes` (a single larger turn makes a larger chunk).
    """

    max_state_bytes: int = 40 * 1024
    """With the runs index of the kept turns, the archived runs and the chunk references, a
    state stays under 64 KiB plus its latest turn."""
    keep_bytes: int = 16 * 1024
    max_chunk_bytes: int = 1024 * 1024
    max_chunk_refs: int = 32
    """References kept in the state; older chunks are reached through each chunk's `previous`."""
    max_archived_runs: int = 32
    """Run records of archived turns kept in the state (retries of those are answered from the archive)."""

    def __post_init__(self) -> None:
        if not 0 < self.keep_bytes <= self.max_state_bytes:
            raise ValueError("ArchivePolicy needs 0 < keep_bytes <= max_state_bytes")
        if self.max_chunk_bytes < 1 or self.max_chunk_refs < 1 or self.max_archived_runs < 0:
            raise ValueError("ArchivePolicy sizes must be positive")


@dataclass(frozen=True)
class PendingChunk:
    """A chunk to store before the state that references it is saved."""

    ref: ChunkRef
    data: bytes


@dataclass(frozen=True)
class ArchivePlan:
    """What `apply_archive` will do: move `move` oldest entries into `chunks` (in order)."""

    epoch: str
    move: int
    chunks: tuple[PendingChunk, ...]
    runs: dict[str, Doc]


@dataclass(frozen=True)
class Chunk:
    """A chunk read back and checked: its reference, entries (wire dicts) and predecessor."""

    ref: ChunkRef
    epoch: str
    entries: tuple[Mapping[str, Any], ...]
    previous: ChunkRef | None
    runs: Mapping[str, Any]


def archive_info(state: AgentState) -> ArchiveInfo | None:
    """The state's archive, or None when nothing was archived yet."""
    raw = state._data.get("archive")
    if not isinstance(raw, dict):
        return None
    return ArchiveInfo(
        raw["epoch"], raw["archivedEntries"], tuple(ChunkRef.from_json(r) for r in raw["chunks"])
    )


def find_archived_run(state: AgentState, correlation_id: str) -> ArchivedRun | None:
    """The run record of an archived turn kept in the state (the most recent ones), or None."""
    raw = state._data.get("archive")
    run = raw.get("runs", {}).get(correlation_id) if isinstance(raw, dict) else None
    if run is None:
        return None
    return ArchivedRun(run["status"], run.get("requestIndex"), run["responseIndex"], run.get("requestHash"))


def entry_sizes(entries: Sequence[Mapping[str, Any]]) -> list[int]:
    """The stored size of each entry (compact JSON, UTF-8 bytes)."""
    return [len(orjson.dumps(e)) for e in entries]


def _boundaries(history: Sequence[Mapping[str, Any]]) -> list[int]:
    # Where a cut may fall: before a request that follows a response (or at the start), so a
    # turn's request and response (and the tool calls and results inside it) stay together.
    return [
        i
        for i in range(1, len(history))
        if history[i]["$type"] == "request" and history[i - 1]["$type"] == "response"
    ]


def plan_archive(state: AgentState, policy: ArchivePolicy) -> ArchivePlan | None:
    """The archiving this state needs under `policy`, or None when its entries fit."""
    history = state._history
    sizes = entry_sizes(history)
    total = sum(sizes)
    if total <= policy.max_state_bytes:
        return None
    cuts = _boundaries(history)
    if not cuts:
        return None
    # The smallest cut that leaves at most keep_bytes; else the last turn alone stays.
    suffix = total
    cut = cuts[-1]
    position = 0
    for boundary in cuts:
        suffix -= sum(sizes[position:boundary])
        position = boundary
        if suffix <= policy.keep_bytes:
            cut = boundary
            break
    info = archive_info(state)
    epoch = info.epoch if info is not None else secrets.token_hex(8)
    first = info.archived_entries if info is not None else 0
    previous = info.chunks[-1] if info is not None and info.chunks else None
    sequence = info.next_sequence if info is not None else 0
    runs = _runs_of(state, cut)
    chunks: list[PendingChunk] = []
    start = 0
    for end in _chunk_ends([b for b in cuts if b < cut] + [cut], sizes, policy.max_chunk_bytes):
        pending = make_chunk(
            epoch, sequence, first + start, history[start:end], previous,
            {cid: _absolute(run, first) for cid, run in runs.items() if start <= run["responseIndex"] < end},
        )  # fmt: skip
        chunks.append(pending)
        previous = pending.ref
        sequence += 1
        start = end
    return ArchivePlan(epoch, cut, tuple(chunks), {cid: _absolute(r, first) for cid, r in runs.items()})


def _runs_of(state: AgentState, cut: int) -> dict[str, Doc]:
    return {cid: run for cid, run in state._index().items() if run["responseIndex"] < cut}


def _absolute(run: Mapping[str, Any], offset: int) -> Doc:
    request_index = run.get("requestIndex")
    return {
        "status": run["status"],
        "requestIndex": None if request_index is None else request_index + offset,
        "responseIndex": run["responseIndex"] + offset,
        "requestHash": run.get("requestHash"),
    }


def _chunk_ends(turn_ends: list[int], sizes: list[int], max_bytes: int) -> list[int]:
    # Greedy: whole turns into a chunk until the next one would take it over max_bytes.
    ends: list[int] = []
    size = 0
    turn_start = 0
    for turn_end in turn_ends:
        piece = sum(sizes[turn_start:turn_end])
        if size and size + piece > max_bytes:
            ends.append(turn_start)
            size = 0
        size += piece
        turn_start = turn_end
    ends.append(turn_ends[-1])
    return ends


def make_chunk(
    epoch: str,
    sequence: int,
    first: int,
    entries: Sequence[Mapping[str, Any]],
    previous: ChunkRef | None,
    runs: Mapping[str, Any],
) -> PendingChunk:
    """Serialize entries (absolute index `first` on) as the chunk `sequence` of `epoch`."""
    document = {
        "format": CHUNK_FORMAT,
        "schemaVersion": CURRENT_SCHEMA_VERSION,
        "epoch": epoch,
        "sequence": sequence,
        "first": first,
        "previous": None if previous is None else previous.to_json(),
        "runs": dict(runs),
        "entries": list(entries),
    }
    data = orjson.dumps(document)
    name = f"{sequence:08d}-{hashlib.sha256(data).hexdigest()}"
    return PendingChunk(ChunkRef(name, first, len(entries), len(data)), data)


def apply_archive(state: AgentState, plan: ArchivePlan, policy: ArchivePolicy) -> None:
    """Move the planned entries out of the state and reference their chunks (after storing them)."""
    info = archive_info(state)
    raw = state._data.get("archive")
    archive: Doc = dict(raw) if isinstance(raw, dict) else {}
    refs = [r.to_json() for r in (info.chunks if info else ())] + [c.ref.to_json() for c in plan.chunks]
    runs: dict[str, Doc] = dict(archive.get("runs", {}))
    for cid, run in plan.runs.items():
        runs.pop(cid, None)  # re-inserted last: the dict stays in archive order
        runs[cid] = run
    archive["epoch"] = plan.epoch
    moved_messages = sum(len(t) for t in replay_turns(state._history[: plan.move]))
    archive["archivedEntries"] = (info.archived_entries if info else 0) + plan.move
    archive["archivedMessages"] = state.archived_messages + moved_messages
    state._take_prefix(plan.move)
    archive["chunks"] = refs[-policy.max_chunk_refs :]
    archive["runs"] = (
        dict(list(runs.items())[-policy.max_archived_runs :]) if policy.max_archived_runs else {}
    )
    state._data["archive"] = archive


def read_chunk(ref: ChunkRef | str, data: bytes, *, epoch: str | None = None) -> Chunk:
    """Check and parse a chunk's bytes. Raises HistoryUnavailable naming the chunk when its
    bytes do not match its name, it is not a chunk, or it is not the chunk `ref` describes."""
    name = ref if isinstance(ref, str) else ref.name
    if _CHUNK_NAME.fullmatch(name) is None:
        raise HistoryUnavailable(name, "not a chunk name")
    if hashlib.sha256(data).hexdigest() != name[9:]:
        raise HistoryUnavailable(name, "its bytes do not match its digest (corrupt)")
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise HistoryUnavailable(name, "not JSON") from None
    if not _chunk_doc_ok(doc) or doc["sequence"] != int(name[:8]):
        raise HistoryUnavailable(name, "not a history chunk")
    if epoch is not None and doc["epoch"] != epoch:
        raise HistoryUnavailable(name, f"belongs to archive {doc['epoch']}, not {epoch}")
    entries = tuple(doc["entries"])
    actual = ChunkRef(name, doc["first"], len(entries), len(data))
    if not isinstance(ref, str) and (ref.first, ref.count) != (actual.first, actual.count):
        raise HistoryUnavailable(name, "it does not hold the entries its reference names")
    previous = ChunkRef.from_json(doc["previous"]) if doc["previous"] is not None else None
    return Chunk(actual, doc["epoch"], entries, previous, doc["runs"])


def _chunk_doc_ok(doc: Any) -> bool:
    if type(doc) is not dict or doc.get("format") != CHUNK_FORMAT:
        return False
    if type(doc.get("epoch")) is not str or _EPOCH.fullmatch(doc["epoch"]) is None:
        return False
    if type(doc.get("sequence")) is not int or type(doc.get("first")) is not int:
        return False
    entries = doc.get("entries")
    if type(entries) is not list or not entries or not all(_entry_ok(e) for e in entries):
        return False
    previous = doc.get("previous")
    if previous is not None and not _chunk_ref_ok(previous):
        return False
    return type(doc.get("runs")) is dict
