"""The stored session document, read in one place: the parsed JSON `state.dump_state` wrote, plus
the marks hosting keeps in its `data` (which the state package carries verbatim).

Pure, no IO. Every wire key hosting reads or writes of a stored document is here; readers
elsewhere ask a `StoredDocument`. The HTTP side polls entity state while it waits: the `data.runs`
index (schema 1.2.0) points at the two entries of a finished run, so only those are looked at,
never the whole typed state. The entity, which has loaded the typed state already, reads the
marks from `StoredDocument.of_state` without parsing the text again.

Marks:
* `data.discardedRuns`: run ids a reset or delete discarded (answered 410, never run again);
* `data.refusedRuns`: turns refused (`session_too_large`) when not even the record of the
  refusal fit, kept by id so they are still answered;
* `data.deletedAt`: a delete's tombstone (an empty history that remembers the discarded ids).

And the owner (`data.userId`, state 1.5.0): the user the session belongs to. `visible_to` is the
one rule of who may see a session: its owner, or anyone when it has none.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agents import TurnResult, turn_result
from state import JSON, AgentState, compact_json

from ._approvals import Approval, recorded_approvals

DISCARDED_KEY = "discardedRuns"
REFUSED_KEY = "refusedRuns"
DELETED_KEY = "deletedAt"
OWNER_KEY = "userId"
STEERED_BY = "steerCorrelationId"
"""(1.7.0) On a message a run sent with `steer` added to another run's turn: that run's id."""
_HISTORY = "conversationHistory"
_TYPE = "$type"


class Internal:
    """The viewer of a read made inside the app (a stream rendering a run its caller was
    checked for already, an orchestration): every session is visible to it."""

    def __repr__(self) -> str:
        return "INTERNAL"


INTERNAL = Internal()
"""The one `Internal` viewer."""

Viewer = str | None | Internal
"""Whom a read of a session is for: a user, no one in particular (None), or the app (`INTERNAL`)."""


@dataclass(frozen=True)
class StoredRun:
    """A finished run found in a state's JSON: its entries and the hash of its request."""

    correlation_id: str
    request: dict[str, JSON] | None
    response: dict[str, JSON]
    request_hash: str | None

    def result(self) -> TurnResult:
        """The run's result from its stored entries: `agents.turn_result`, as the entity computes it."""
        return turn_result(self.correlation_id, self.request, self.response)

    @property
    def approvals(self) -> list[Approval]:
        """(1.8.0) The tool calls it paused for, with their decisions (none when it never paused)."""
        return recorded_approvals(self.response)


@dataclass(frozen=True)
class ArchivedRun:
    """Where an archived run's entries are: absolute history indexes, and its request's hash."""

    response_index: int
    request_index: int | None
    request_hash: str | None


@dataclass(frozen=True)
class TurnEntry:
    """One turn as the history lists it: its request and, once finished, its response entry."""

    correlation_id: str | None
    created_at: str | None
    response: Mapping[str, JSON] | None = None

    @property
    def usage(self) -> JSON:
        return None if self.response is None else self.response.get("usage")

    @property
    def approvals(self) -> list[Approval]:
        """(1.8.0) The tool calls its run paused for, with their decisions, once it finished."""
        return [] if self.response is None else recorded_approvals(self.response)


@dataclass(frozen=True)
class WaitingRun:
    """(1.6.0) A run the session holds that has not finished: the turn in progress
    (`data.activeTurn`) or a run queued behind it (`data.queuedRuns`)."""

    correlation_id: str
    messages: list[dict[str, str]]
    """What it was sent with: `{"role", "text"}` each (its history entries are written at its end)."""
    started_at: str | None
    """When the turn in progress started; None for a queued run (not started)."""
    queued: bool

    @property
    def text(self) -> str | None:
        """Its first message's text, or None."""
        return self.messages[0]["text"] if self.messages else None


def _parse_time(stamp: Any) -> datetime | None:
    if not isinstance(stamp, str):
        return None
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def first_text(entry: Mapping[str, JSON]) -> str | None:
    """The first text content of an entry's messages, or None."""
    for message in entry.get("messages") or []:
        for content in (message or {}).get("contents") or []:
            if isinstance(content, dict) and content.get(_TYPE) == "text":
                return str(content.get("text", ""))
    return None


@dataclass(frozen=True)
class StoredDocument:
    """A session's stored document (parsed JSON; anything else reads as empty)."""

    document: JSON

    @classmethod
    def of_state(cls, state: AgentState) -> StoredDocument:
        """The document of a loaded state (no parse: it shares the state's structure)."""
        return cls(state.to_document())

    @classmethod
    def parse(cls, value: JSON) -> StoredDocument | None:
        """A document from a parsed value or its JSON text; None when it is not a JSON object."""
        if isinstance(value, str | bytes):
            try:
                value = json.loads(value)
            except ValueError:
                return None
        return cls(value) if isinstance(value, dict) else None

    # -- the document ---------------------------------------------------------------------

    @property
    def data(self) -> Mapping[str, JSON]:
        data = self.document.get("data") if isinstance(self.document, Mapping) else None
        return data if isinstance(data, Mapping) else {}

    @property
    def history(self) -> list[JSON]:
        history = self.data.get(_HISTORY)
        return history if isinstance(history, list) else []

    @property
    def schema_version(self) -> str | None:
        version = self.document.get("schemaVersion") if isinstance(self.document, Mapping) else None
        return version if isinstance(version, str) else None

    @property
    def state_bag(self) -> dict[str, JSON]:
        bag = self.data.get("stateBag")
        return bag if isinstance(bag, dict) else {}

    def size_bytes(self) -> int:
        """The size of the stored text, counted as the entity counts it (UTF-8 bytes)."""
        return len(compact_json(self.document).encode("utf-8"))

    # -- archive --------------------------------------------------------------------------

    @property
    def archive(self) -> Mapping[str, JSON] | None:
        """`data.archive` (older entries in chunks, by reference), or None."""
        archive = self.data.get("archive")
        return archive if isinstance(archive, Mapping) else None

    @property
    def archive_epoch(self) -> str | None:
        """The epoch of `data.archive` (its chunks' folder), or None: nothing archived."""
        epoch = self.archive.get("epoch") if self.archive is not None else None
        return epoch if isinstance(epoch, str) else None

    def is_archived_run(self, correlation_id: str) -> bool:
        """Whether the run's entries went to the archive (its record is among the archived runs)."""
        runs = self.archive.get("runs") if self.archive is not None else None
        return isinstance(runs, Mapping) and correlation_id in runs

    def archived_run(self, correlation_id: str) -> ArchivedRun | None:
        """Where the archived run `correlation_id` is (its record in `data.archive.runs`), or None."""
        runs = self.archive.get("runs") if self.archive is not None else None
        return self.archived_record(runs.get(correlation_id) if isinstance(runs, Mapping) else None)

    @staticmethod
    def archived_record(record: object) -> ArchivedRun | None:
        """An archived run's record (`data.archive.runs`, or a chunk's `runs`: absolute indexes)."""
        if not isinstance(record, Mapping):
            return None
        return ArchivedRun(record["responseIndex"], record.get("requestIndex"), record.get("requestHash"))

    def archived_runs_indexed(self) -> int:
        """How many archived runs `data.archive.runs` indexes (it keeps the most recent ones)."""
        runs = self.archive.get("runs") if self.archive is not None else None
        return len(runs) if isinstance(runs, Mapping) else 0

    def counts(self) -> tuple[int, int]:
        """(entries in all, entries archived)."""
        archived = self.archive["archivedEntries"] if self.archive is not None else 0
        return archived + len(self.history), archived

    # -- runs -----------------------------------------------------------------------------

    def _entry(self, index: Any, kind: str, correlation_id: str) -> dict[str, JSON] | None:
        history = self.history
        if not isinstance(index, int) or not 0 <= index < len(history):
            return None
        entry = history[index]
        kept = isinstance(entry, dict) and entry.get(_TYPE) == kind
        return entry if kept and entry.get("correlationId") == correlation_id else None

    def find_run(self, correlation_id: str) -> StoredRun | None:
        """The finished run `correlation_id` in the history, or None if it has not finished.

        Uses `data.runs` when present; states written before 1.2.0 are scanned from the end.
        """
        history = self.data.get(_HISTORY)
        if not isinstance(history, list):
            return None
        runs = self.data.get("runs")
        if isinstance(runs, dict):
            record = runs.get(correlation_id)
            if isinstance(record, dict):
                response = self._entry(record.get("responseIndex"), "response", correlation_id)
                if response is not None:
                    request = self._entry(record.get("requestIndex"), "request", correlation_id)
                    return StoredRun(correlation_id, request, response, record.get("requestHash"))
        # No index entry: an older state, or a run this writer recorded without one.
        for position in range(len(history) - 1, -1, -1):
            entry = history[position]
            if isinstance(entry, dict) and entry.get("correlationId") == correlation_id:
                if entry.get(_TYPE) != "response":
                    return None
                request = None
                for back in range(position - 1, -1, -1):
                    request = self._entry(back, "request", correlation_id)
                    if request is not None:
                        break
                hash_ = runs.get(correlation_id, {}).get("requestHash") if isinstance(runs, dict) else None
                return StoredRun(correlation_id, request, entry, hash_)
        return None

    def run_ids(self) -> list[str]:
        """Every run id the state knows, oldest first: archived runs still indexed, the runs
        index, history entries of writers before the index, turns refused by id only, and the turn
        in progress and the runs queued behind it."""
        archived = self.archive.get("runs") if self.archive is not None else None
        ids = [i for i in (archived if isinstance(archived, dict) else {}) if isinstance(i, str)]
        runs = self.data.get("runs")
        ids += [i for i in (runs if isinstance(runs, dict) else {}) if isinstance(i, str)]
        for entry in self.history:  # states written before the runs index
            cid = entry.get("correlationId") if isinstance(entry, dict) else None
            if isinstance(cid, str):
                ids.append(cid)
        ids += self.refused_ids
        ids += self.waiting_ids()
        return list(dict.fromkeys(ids))

    def waiting_ids(self) -> list[str]:
        """(1.6.0) The run ids of the turn in progress and of the runs queued behind it."""
        return [run.correlation_id for run in self.waiting_runs()]

    def waiting_runs(self) -> list[WaitingRun]:
        """(1.6.0) The turn in progress, then the runs queued behind it (oldest first): the runs
        the session holds that have no entries in its history yet."""
        active = self.data.get("activeTurn")
        request = active.get("request") if isinstance(active, dict) else None
        started = active.get("startedAt") if isinstance(active, dict) else None
        queued = self.data.get("queuedRuns")
        runs = []
        for position, waiting in enumerate([request, *(queued if isinstance(queued, list) else [])]):
            cid = waiting.get("correlationId") if isinstance(waiting, dict) else None
            if not isinstance(waiting, dict) or not isinstance(cid, str):
                continue
            raw = waiting.get("messages")
            messages = [
                {"role": str(m.get("role")), "text": str(m.get("text"))}
                for m in (raw if isinstance(raw, list) else [])
                if isinstance(m, dict) and isinstance(m.get("text"), str)
            ]
            if position == 0:
                runs.append(WaitingRun(cid, messages, started if isinstance(started, str) else None, False))
            else:
                runs.append(WaitingRun(cid, messages, None, True))
        return runs

    def steer_ids(self) -> list[str]:
        """(1.7.0) The ids of the runs sent with `steer` that the state names: waiting in the turn in
        progress, or marked (`steerCorrelationId`) on the messages they added to it or to a stored
        response. They have no record of their own (a steer run is answered as the run it joined)."""
        ids: list[JSON] = []
        active = self.data.get("activeTurn")
        if isinstance(active, dict):
            steered = active.get("steered")
            for item in steered if isinstance(steered, list) else []:
                ids.append(item.get("correlationId") if isinstance(item, dict) else None)
            progress = active.get("progress")
            ids += _steer_marks(progress.get("messages") if isinstance(progress, dict) else None)
        ids += self.steer_marks(self.history)
        return list(dict.fromkeys(i for i in ids if isinstance(i, str)))

    @staticmethod
    def steer_marks(entries: Iterable[object]) -> list[JSON]:
        """The steer run ids marked on the messages of history entries (the state's, a chunk's)."""
        ids: list[JSON] = []
        for entry in entries:
            ids += _steer_marks(entry.get("messages") if isinstance(entry, Mapping) else None)
        return ids

    def steered_into(self, correlation_id: str) -> str | None:
        """(1.7.0) The run a run sent with `steer` joined: the turn in progress, while its messages
        wait for the turn's next model step (`activeTurn.steered`), then the run whose stored
        response holds them (a message marked `steerCorrelationId`); None otherwise."""
        active = self.data.get("activeTurn")
        if isinstance(active, dict):
            steered = active.get("steered")
            request = active.get("request")
            for item in steered if isinstance(steered, list) else []:
                if isinstance(item, dict) and item.get("correlationId") == correlation_id:
                    running = request.get("correlationId") if isinstance(request, dict) else None
                    return running if isinstance(running, str) else None
            progress = active.get("progress")
            messages = progress.get("messages") if isinstance(progress, dict) else None
            if _marked(messages, correlation_id) and isinstance(request, dict):
                running = request.get("correlationId")
                return running if isinstance(running, str) else None
        for entry in reversed(self.history):
            if not isinstance(entry, dict) or entry.get(_TYPE) != "response":
                continue
            if _marked(entry.get("messages"), correlation_id):
                into = entry.get("correlationId")
                return into if isinstance(into, str) else None
        return None

    def turns(self) -> list[TurnEntry]:
        """The history's turns in order: a request's turn, finished when its response came (a
        response without its request, as older writers left some, is a turn of its own)."""
        turns: list[TurnEntry] = []
        by_id: dict[str | None, int] = {}
        for entry in self.history:
            if not isinstance(entry, dict):
                continue
            cid = entry.get("correlationId")
            if entry.get(_TYPE) == "request":
                by_id[cid] = len(turns)
                turns.append(TurnEntry(cid, entry.get("createdAt")))
            elif entry.get(_TYPE) == "response":
                index = by_id.pop(cid, None)
                if index is None:
                    turns.append(TurnEntry(cid, entry.get("createdAt"), entry))
                else:
                    turns[index] = TurnEntry(cid, turns[index].created_at, entry)
        return turns

    def requests(self) -> list[Mapping[str, JSON]]:
        """The history's request entries."""
        return [e for e in self.history if isinstance(e, dict) and e.get(_TYPE) == "request"]

    def request_of(self, correlation_id: str) -> Mapping[str, JSON] | None:
        """The request entry of run `correlation_id` in the history (also of one not finished)."""
        return next((e for e in reversed(self.requests()) if e.get("correlationId") == correlation_id), None)

    def last_activity(self) -> datetime | None:
        """When the session last ran a turn or was reset (`data.lastActivityAt`, else its newest
        entry)."""
        moment = _parse_time(self.data.get("lastActivityAt"))
        if moment is None:
            history = self.history
            newest = history[-1] if history else None
            moment = _parse_time(newest.get("createdAt")) if isinstance(newest, Mapping) else None
        return moment

    # -- owner ----------------------------------------------------------------------------

    @property
    def owner(self) -> str | None:
        """The user the session belongs to (`data.userId`), or None: no one in particular."""
        owner = self.data.get(OWNER_KEY)
        return owner if isinstance(owner, str) else None

    def visible_to(self, user: Viewer) -> bool:
        """Whether a caller acting for `user` (None: for no one) may see the session: a session
        without an owner is everyone's; an owned one is its owner's alone (an owner that is not
        a string, which no writer of ours leaves, matches no caller); `INTERNAL` sees all."""
        if isinstance(user, Internal):
            return True
        return OWNER_KEY not in self.data or self.data.get(OWNER_KEY) == user

    # -- marks ----------------------------------------------------------------------------

    def listed(self, key: str) -> list[str]:
        """The run ids listed under `data[key]`, most recent last; anything else is ignored."""
        ids = self.data.get(key)
        return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []

    @property
    def discarded_ids(self) -> list[str]:
        """The run ids earlier resets or a delete of this session discarded."""
        return self.listed(DISCARDED_KEY)

    @property
    def refused_ids(self) -> list[str]:
        """The ids of the turns refused without a record."""
        return self.listed(REFUSED_KEY)

    @property
    def is_tombstone(self) -> bool:
        """Whether this is what a delete left behind (an empty history marked `deletedAt`; a turn
        on it since would have dropped the mark)."""
        return DELETED_KEY in self.data and self.data.get(_HISTORY) == []

    def marked(self, **marks: JSON) -> dict[str, JSON]:
        """A copy of the document (sharing what is unchanged) with marks set in `data`:
        `discarded`, `refused` (id lists), `deleted_at` (RFC 3339) or `owner`; None removes one."""
        keys = {
            "discarded": DISCARDED_KEY,
            "refused": REFUSED_KEY,
            "deleted_at": DELETED_KEY,
            "owner": OWNER_KEY,
        }
        data = dict(self.data)
        for name, value in marks.items():
            if value is None:
                data.pop(keys[name], None)
            else:
                data[keys[name]] = value
        return {**self.document, "data": data}


def _steer_marks(messages: JSON) -> list[JSON]:
    if not isinstance(messages, list):
        return []
    return [m.get(STEERED_BY) for m in messages if isinstance(m, dict) and STEERED_BY in m]


def _marked(messages: JSON, correlation_id: str) -> bool:
    return isinstance(messages, list) and any(
        isinstance(m, dict) and m.get(STEERED_BY) == correlation_id for m in messages
    )


def response_entry(correlation_id: str, failure: Mapping[str, JSON]) -> dict[str, JSON]:
    """A response entry (wire form) with no messages that records a failed turn: what a run
    refused without a record of its own stands for."""
    return {_TYPE: "response", "correlationId": correlation_id, "messages": [], "failure": dict(failure)}
