"""`AgentState`: one agent session's stored state, and `load_state` / `dump_state`."""

from __future__ import annotations

import gc
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import orjson
from pydantic import TypeAdapter, ValidationError

from ._check import document_ok
from ._errors import InvalidState
from ._models import JSON, AgentRequest, AgentResponse, ChatMessage
from ._versions import CURRENT_SCHEMA_VERSION, MISSING, json_kind, parse_version, upgrade
from ._wire import ENTRY, NOT_PARSED, Doc, dumps, invalid_from, loads_fast, parse_json, validate_doc

Entry = AgentRequest | AgentResponse
RunStatus = Literal["succeeded", "failed"]

_HISTORY = "conversationHistory"
_MESSAGES = TypeAdapter(list[ChatMessage])


@dataclass(frozen=True, slots=True)
class RunRecord:
    """How a finished run (one correlation id) ended, with its request and response entries."""

    status: RunStatus
    request: AgentRequest | None
    response: AgentResponse
    request_hash: str | None
    request_wire: Mapping[str, Any] | None = None
    """The request entry as stored (camelCase wire dict, validated): read it, don't change it."""
    response_wire: Mapping[str, Any] | None = None
    """The response entry as stored (camelCase wire dict, validated): read it, don't change it."""


class AgentState:
    """The state of one agent session: its conversation history and our additions (1.2.0 to 1.8.0).

    Build one with `AgentState.new()` or `load_state(text)`; entries are immutable records
    added with `append_request` / `append_response`.
    """

    __slots__ = (
        "_data", "_history", "_models", "_root", "_runs", "_write_runs", "schema_version", "state_bag",
    )  # fmt: skip

    def __init__(self, doc: Doc | None = None, *, loaded_version: str = CURRENT_SCHEMA_VERSION) -> None:
        """Wrap a validated, upgraded document; use `new()` or `load_state` rather than this."""
        if doc is None:
            doc = {"schemaVersion": CURRENT_SCHEMA_VERSION, "data": {_HISTORY: [], "runs": {}}}
        self._root: Doc = doc
        self._data: Doc = doc["data"]
        self._history: list[Doc] = self._data.get(_HISTORY, [])
        self._models: list[Entry | None] = [None] * len(self._history)
        self.schema_version: str = loaded_version
        """The version the state was loaded with (`dump_state` always writes the current one)."""
        self.state_bag: dict[str, JSON] = self._data.get("stateBag", {})
        """(1.2.0) Context-provider session state, keyed by provider source id; JSON values only."""
        runs = self._data.get("runs")
        # `runs` is written back when it was stored or once a response is appended. It is
        # derived data: a stored index is checked where it is used (the entries a lookup points
        # at, and the latest response on load), and one that does not match the history is
        # rebuilt from it, never trusted; the history itself is left alone.
        self._runs: dict[str, Doc] | None = runs
        self._write_runs = False
        if runs is not None and not _latest_run_indexed(runs, self._history):
            self._runs = None
            self._write_runs = True

    @classmethod
    def new(cls) -> AgentState:
        """An empty state of the current schema version."""
        return cls({"schemaVersion": CURRENT_SCHEMA_VERSION, "data": {_HISTORY: [], "runs": {}}})

    # --- reading -------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._history)

    @property
    def entries(self) -> Sequence[Entry]:
        """Every entry of the conversation history, oldest first."""
        return tuple(self._entry(i) for i in range(len(self._history)))

    @property
    def service_thread_id(self) -> str | None:
        """(1.2.0) The model service's conversation / last response id (service-side history)."""
        value = self._data.get("serviceThreadId")
        return value if isinstance(value, str) else None

    @service_thread_id.setter
    def service_thread_id(self, value: str | None) -> None:
        if value is not None and not isinstance(value, str):
            raise TypeError(f"service_thread_id must be a string or None, not {type(value).__name__}")
        if value is None and "serviceThreadId" not in self._data:
            return
        self._data["serviceThreadId"] = value

    def find_run(self, correlation_id: str) -> RunRecord | None:
        """The finished run with this correlation id (its latest response), or None."""
        run = self._index().get(correlation_id)
        if run is not None and not _run_matches(correlation_id, run, self._history):
            self._runs = None
            self._write_runs = True
            run = self._index().get(correlation_id)
        if run is None:
            return None
        request_index = run.get("requestIndex")
        request = self._entry(request_index) if request_index is not None else None
        response = self._entry(run["responseIndex"])
        assert isinstance(response, AgentResponse)
        assert request is None or isinstance(request, AgentRequest)
        return RunRecord(
            status=run["status"],
            request=request,
            response=response,
            request_hash=run.get("requestHash"),
            request_wire=self._history[request_index] if request_index is not None else None,
            response_wire=self._history[run["responseIndex"]],
        )

    def replay_messages(self) -> Iterator[ChatMessage]:
        """Messages of every finished, non-failed turn, request then response, in history order."""
        raw_messages = list(self.replay_wire())
        # One batched validation of the raw messages is far cheaper than one call per entry.
        with _gc_paused():
            messages: list[ChatMessage] = _MESSAGES.validate_python(
                raw_messages, by_alias=True, by_name=False
            )
        return iter(messages)

    def replay_wire(self) -> Iterator[Mapping[str, Any]]:
        """The messages `replay_messages` yields, as their stored (validated) wire dicts.

        Read-only views into the state: no model is built, so this is the cheap way to send a
        long history to a model. Don't mutate them.
        """
        return (m for turn in replay_turns(self._history) for m in turn)

    # --- writing -------------------------------------------------------------------------

    def append_request(self, entry: AgentRequest) -> None:
        """Add a request entry at the end of the history."""
        if not isinstance(entry, AgentRequest):
            raise TypeError(f"append_request takes an AgentRequest, not {type(entry).__name__}")
        self._append(entry)

    def append_response(self, entry: AgentResponse, *, request_hash: str | None = None) -> None:
        """Add a response entry and record its run (failed when `failure` is set) in `runs`.

        `request_hash` is the identity of what the run asked, when the writer knows more of it
        than the request entry holds (`request_hash(entry, options)`); by default the request
        entry's own hash.
        """
        if not isinstance(entry, AgentResponse):
            raise TypeError(f"append_response takes an AgentResponse, not {type(entry).__name__}")
        runs = self._index()
        raw = self._append(entry)
        self._write_runs = True
        cid = entry.correlation_id
        if cid is not None:
            run = _run_for(self._history, len(self._history) - 1, raw)
            if request_hash is not None and run["requestIndex"] is not None:
                run["requestHash"] = request_hash
            runs[cid] = run

    def set_response_approvals(self, correlation_id: str, approvals: list[JSON]) -> None:
        """(1.8.0) Keep `approvals` (the host's records of the tool calls the run waited on, with
        their decisions) on the response entry of finished run `correlation_id`."""
        run = self._index().get(correlation_id)
        if run is None or not _run_matches(correlation_id, run, self._history):
            raise KeyError(f"no finished run {correlation_id!r} to keep approvals on")
        index = run["responseIndex"]
        # Entries are immutable records: the entry is replaced, and its model built again on read.
        self._history[index] = {**self._history[index], "approvals": list(approvals)}
        self._models[index] = None

    @property
    def last_activity_at(self) -> str | None:
        """(1.3.0) When the session last ran a turn or was reset (RFC 3339), for idle expiry."""
        value = self._data.get("lastActivityAt")
        return value if isinstance(value, str) else None

    @last_activity_at.setter
    def last_activity_at(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"last_activity_at must be a string, not {type(value).__name__}")
        self._data["lastActivityAt"] = value

    @property
    def user_id(self) -> str | None:
        """(1.5.0) The user the session belongs to (set when a user created it), or None: a
        session of no one in particular. The package stores it; hosts decide who may see it."""
        value = self._data.get("userId")
        return value if isinstance(value, str) else None

    @user_id.setter
    def user_id(self, value: str | None) -> None:
        if value is None:
            self._data.pop("userId", None)
            return
        if not isinstance(value, str):
            raise TypeError(f"user_id must be a string, not {type(value).__name__}")
        self._data["userId"] = value

    # --- the turn in progress (1.6.0) -----------------------------------------------------

    @property
    def active_turn(self) -> dict[str, JSON] | None:
        """(1.6.0) The turn in progress between its steps (`data.activeTurn`; its content is the
        host's), None when no turn is in progress. The turn's entries are appended only when it
        ends, so a finished turn is stored exactly as one run in a single step would be."""
        value = self._data.get("activeTurn")
        return value if isinstance(value, dict) else None

    @active_turn.setter
    def active_turn(self, value: dict[str, JSON] | None) -> None:
        if value is None:
            self._data.pop("activeTurn", None)
            return
        if not isinstance(value, dict):
            raise TypeError(f"active_turn must be a dict or None, not {type(value).__name__}")
        self._data["activeTurn"] = value

    @property
    def queued_runs(self) -> list[JSON]:
        """(1.6.0) Turn requests waiting for the turn in progress, oldest first (`data.queuedRuns`)."""
        value = self._data.get("queuedRuns")
        return list(value) if isinstance(value, list) else []

    @queued_runs.setter
    def queued_runs(self, value: list[JSON]) -> None:
        if not isinstance(value, list):
            raise TypeError(f"queued_runs must be a list, not {type(value).__name__}")
        if value:
            self._data["queuedRuns"] = list(value)
        else:
            self._data.pop("queuedRuns", None)

    # --- archive (1.3.0): see state._archive -----------------------------------------------

    @property
    def archived_entries(self) -> int:
        """(1.3.0) How many of the oldest entries live in archived chunks, not in `entries`."""
        archive = self._data.get("archive")
        return int(archive["archivedEntries"]) if isinstance(archive, dict) else 0

    @property
    def total_entries(self) -> int:
        """Every entry of the session: the archived ones plus those in `entries`."""
        return self.archived_entries + len(self._history)

    @property
    def archived_messages(self) -> int:
        """(1.3.0) How many replayable messages (`replay_wire`) went to the archive with the
        archived entries: the position of this state's first replayed message in the whole history."""
        archive = self._data.get("archive")
        return int(archive.get("archivedMessages", 0)) if isinstance(archive, dict) else 0

    def raw_entries(self) -> Sequence[Mapping[str, Any]]:
        """The entries in the state as stored wire dicts (validated; read them, don't change them)."""
        return self._history

    def _take_prefix(self, count: int) -> tuple[list[Doc], dict[str, Doc]]:
        """Remove the `count` oldest entries; return them and the runs they held (indexes
        relative to the removed entries). The runs of the remaining entries are shifted."""
        runs = self._index()
        moved_runs: dict[str, Doc] = {}
        kept_runs: dict[str, Doc] = {}
        for cid, run in runs.items():
            if run["responseIndex"] < count:
                moved_runs[cid] = run
                continue
            shifted = dict(run)
            shifted["responseIndex"] = run["responseIndex"] - count
            request_index = run.get("requestIndex")
            shifted["requestIndex"] = (
                None if request_index is None or request_index < count else request_index - count
            )
            kept_runs[cid] = shifted
        moved = self._history[:count]
        del self._history[:count]
        del self._models[:count]
        self._runs = kept_runs
        self._write_runs = True
        return moved, moved_runs

    def to_document(self) -> Doc:
        """The wire document `dump_state` writes (shares structure with the state: don't mutate)."""
        data: Doc = dict(self._data)
        if _HISTORY in data or self._history:
            data[_HISTORY] = self._history
        if self.state_bag or "stateBag" in self._data:
            data["stateBag"] = self.state_bag
        if self._write_runs:
            data["runs"] = self._index()
        root: Doc = {"schemaVersion": CURRENT_SCHEMA_VERSION, "data": data}
        for key, value in self._root.items():
            if key not in root:
                root[key] = value
        return root

    # --- internals -----------------------------------------------------------------------

    def _append(self, entry: Entry) -> Doc:
        raw = entry.model_dump(mode="json", by_alias=True, exclude_none=True)
        try:
            # What we write must load again: check the new entry as strictly as a stored one.
            raw = ENTRY.validate_python(raw, strict=True)  # type: ignore[assignment]
        except ValidationError as exc:
            raise invalid_from(exc, raw, f"data.{_HISTORY}[{len(self._history)}]") from None
        if _HISTORY not in self._data:
            self._data[_HISTORY] = self._history
        self._history.append(raw)
        self._models.append(entry)
        return raw

    def _entry(self, index: int) -> Entry:
        model = self._models[index]
        if model is None:
            raw = self._history[index]
            cls = AgentRequest if raw["$type"] == "request" else AgentResponse
            model = cls.model_validate(raw, by_alias=True, by_name=False)
            self._models[index] = model
        return model

    def _index(self) -> dict[str, Doc]:
        if self._runs is None:
            # States written before 1.2.0 (or with an index that does not match): one scan.
            runs: dict[str, Doc] = {}
            for i, raw in enumerate(self._history):
                cid = raw.get("correlationId")
                if raw["$type"] == "response" and cid is not None:
                    runs[cid] = _run_for(self._history, i, raw)
            self._runs = runs
        return self._runs


def replay_turns(history: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The replayable messages of `history` (wire entries, oldest first), one list per finished,
    non-failed turn: its request's messages, then its response's (tool calls with their results).
    A turn is the unit a context window keeps or drops whole."""
    turns: list[list[Mapping[str, Any]]] = []
    pending: dict[Any, int] = {}
    for i, raw in enumerate(history):
        cid = raw.get("correlationId")
        if raw["$type"] == "request":
            pending[cid] = i
            continue
        request_index = pending.pop(cid, None)
        if response_failed(raw):
            continue
        messages: list[Mapping[str, Any]] = []
        if request_index is not None:
            messages.extend(history[request_index].get("messages", ()))
        messages.extend(raw.get("messages", ()))
        turns.append(messages)
    return turns


def response_failed(response: Mapping[str, Any]) -> bool:
    """Whether a response entry (wire form) records a failed turn.

    A `failure` marks one (1.2.0 on); writers before 1.2.0 recorded a failed turn as a response
    whose contents are all `error` contents. Safe on entries that were not validated.
    """
    if response.get("failure") is not None:
        return True
    # Runs once per stored response on every replay, so it stops at the first non-error content.
    seen = False
    for m in response.get("messages") or ():
        for c in (m.get("contents") or ()) if isinstance(m, dict) else ():
            if not isinstance(c, dict) or c.get("$type") != "error":
                return False
            seen = True
    return seen


def _run_for(history: list[Doc], response_index: int, response: Doc) -> Doc:
    cid = response.get("correlationId")
    request_index: int | None = None
    for i in range(response_index - 1, -1, -1):
        raw = history[i]
        if raw.get("correlationId") == cid:
            if raw["$type"] == "request":
                request_index = i
            break
    run: Doc = {
        "status": "failed" if response_failed(response) else "succeeded",
        "requestIndex": request_index,
        "responseIndex": response_index,
        "requestHash": request_hash(history[request_index]) if request_index is not None else None,
    }
    return run


def request_hash(raw_request: Mapping[str, Any], options: Mapping[str, Any] | None = None) -> str:
    """A stable hash of what a request asked: messages' roles and contents, response format and
    the run's `options` (sampling settings, which the request entry does not hold).

    Timestamps and correlation ids are left out, so a retried request with the same content
    hashes the same. Without options the hash is what it always was, so hashes stored by earlier
    writers still compare.
    """
    material: dict[str, Any] = {
        "messages": [
            {"role": m.get("role"), "contents": m.get("contents", [])}
            for m in raw_request.get("messages", ())
        ],
        "responseType": raw_request.get("responseType"),
        "responseSchema": raw_request.get("responseSchema"),
    }
    if options:
        material["options"] = dict(options)
    try:
        canonical = orjson.dumps(material, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # integers beyond 64 bits
        canonical = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


def _run_matches(cid: str, run: Doc, history: list[Doc]) -> bool:
    n = len(history)
    ri = run["responseIndex"]
    if not 0 <= ri < n or history[ri]["$type"] != "response" or history[ri].get("correlationId") != cid:
        return False
    qi = run.get("requestIndex")
    return qi is None or (
        0 <= qi < n and history[qi]["$type"] == "request" and history[qi].get("correlationId") == cid
    )


def _latest_run_indexed(runs: dict[str, Doc], history: list[Doc]) -> bool:
    # A writer that appended turns without maintaining the index shows up at the end.
    for i in range(len(history) - 1, -1, -1):
        raw = history[i]
        if raw["$type"] == "response":
            cid = raw.get("correlationId")
            if cid is None:
                return True
            run = runs.get(cid)
            return run is not None and run["responseIndex"] == i and _run_matches(cid, run, history)
    return True


def load_state(text: str | bytes) -> AgentState:
    """Read a stored state: any 1.x version, fully validated, older minors upgraded.

    Raises InvalidState (not JSON, wrong shape, wrong types) or IncompatibleStateVersion.
    """
    if not isinstance(text, str | bytes | bytearray):
        raise TypeError(f"load_state takes str or bytes, not {type(text).__name__}")
    doc = parse_state_json(text)
    with _gc_paused():
        ok = document_ok(doc)
    if not ok:
        doc = _diagnose(doc)
    version = doc["schemaVersion"]
    _, minor, _ = parse_version(version)
    upgrade(doc, minor)
    return AgentState(doc, loaded_version=version)


def compact_json(document: Any) -> str:
    """A parsed state document as JSON text, exactly as `dump_state` writes a state: compact and
    not ASCII-escaped. Raises InvalidState for a value that is not JSON."""
    return dumps(document)


def parse_state_json(text: str | bytes) -> Any:
    """Parse a stored state's JSON text exactly as `load_state` parses it, and check nothing more.

    Strict, as JSON is: NaN and Infinity are refused, and integers of any size are kept. Raises
    InvalidState ("the state is not valid JSON: ...") for text that is not JSON. What it returns
    is what `check_state` takes.
    """
    with _gc_paused():
        doc = loads_fast(text)
    return parse_json(text) if doc is NOT_PARSED else doc


def check_state(document: Any) -> int:
    """Check a parsed state document exactly as `load_state` checks what it parsed, and return
    its size: the UTF-8 bytes of the text the entity writes for it (`compact_json`).

    Raises what `load_state` would (InvalidState, IncompatibleStateVersion) and builds nothing:
    for readers that hold the parsed document (the HTTP side reads entity state through the
    durable backend's HTTP API) and must refuse precisely what the entity refuses. The document
    must come from a strict parser (`parse_state_json`): one that admitted NaN or Infinity would
    have them counted here as the `null` the writer would put in their place.
    """
    with _gc_paused():
        ok = document_ok(document)
    if not ok:
        _diagnose(document)
    parse_version(document["schemaVersion"])  # the version policy, as load_state applies it
    return len(compact_json(document).encode("utf-8"))


@contextmanager
def _gc_paused() -> Iterator[None]:
    # Parsing allocates one container per JSON object and creates no reference cycles, so the
    # cyclic collector's passes over a large, growing history are pure overhead here.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _diagnose(root: Any) -> Doc:
    # The slow path: find the first problem in the order a reader cares about (JSON, root
    # shape, version, then content) and raise it; or, if the document is fine after all
    # (e.g. JSON the fast parser refuses), return it validated.
    check_root(root)
    return validate_doc(root)


def check_root(root: Any) -> None:
    """Check a parsed state document's root shape and version policy, without its entries.

    Raises InvalidState or IncompatibleStateVersion as `load_state` would; a cheap first look
    for readers that poll a state (the full check is `load_state`).
    """
    if not isinstance(root, dict):
        raise InvalidState(
            f"the state root must be an object with 'schemaVersion' and 'data', found {json_kind(root)}"
        )
    parse_version(root.get("schemaVersion", MISSING))
    if "data" not in root:
        raise InvalidState("required property is missing", path="data")
    data = root["data"]
    if not isinstance(data, dict):
        raise InvalidState(f"expected an object, found {json_kind(data)}", path="data")
    if _HISTORY in data and not isinstance(data[_HISTORY], list):
        raise InvalidState(f"expected an array, found {json_kind(data[_HISTORY])}", path=f"data.{_HISTORY}")


def dump_state(state: AgentState) -> str:
    """The state as JSON text of the current schema version (unknown properties kept)."""
    if not isinstance(state, AgentState):
        raise TypeError(f"dump_state takes an AgentState, not {type(state).__name__}")
    return dumps(state.to_document())
