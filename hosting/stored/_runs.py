"""Reading a run's outcome straight from a stored state's JSON, without loading the whole model.

The HTTP side polls entity state while it waits; for a long history, building the full typed
state on every poll would cost milliseconds each time. The `data.runs` index (schema 1.2.0) points
at the two entries of a finished run, so only those are looked at.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agents import TurnResult, turn_result

JSON = Any


def compact_text(document: JSON) -> str:
    """A parsed state document as the state package writes it: compact JSON, not ASCII-escaped."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def stored_bytes(document: JSON) -> int:
    """The size of a session's stored text, counted as the entity counts it (UTF-8 bytes)."""
    return len(compact_text(document).encode("utf-8"))


@dataclass(frozen=True)
class StoredRun:
    """A finished run found in a state's JSON: its entries and the hash of its request."""

    correlation_id: str
    request: dict[str, JSON] | None
    response: dict[str, JSON]
    request_hash: str | None


def _entry(history: list[Any], index: Any, kind: str, correlation_id: str) -> dict[str, JSON] | None:
    if not isinstance(index, int) or not 0 <= index < len(history):
        return None
    entry = history[index]
    if (
        isinstance(entry, dict)
        and entry.get("$type") == kind
        and entry.get("correlationId") == correlation_id
    ):
        return entry
    return None


def find_stored_run(state: JSON, correlation_id: str) -> StoredRun | None:
    """The finished run `correlation_id` in a state's JSON, or None if it has not finished.

    Uses `data.runs` when present; states written before 1.2.0 are scanned from the end.
    """
    data = state.get("data") if isinstance(state, dict) else None
    if not isinstance(data, dict):
        return None
    history = data.get("conversationHistory")
    if not isinstance(history, list):
        return None
    runs = data.get("runs")
    if isinstance(runs, dict):
        record = runs.get(correlation_id)
        if isinstance(record, dict):
            response = _entry(history, record.get("responseIndex"), "response", correlation_id)
            if response is not None:
                request = _entry(history, record.get("requestIndex"), "request", correlation_id)
                return StoredRun(correlation_id, request, response, record.get("requestHash"))
    # No index entry: an older state, or a run this writer recorded without one.
    for position in range(len(history) - 1, -1, -1):
        entry = history[position]
        if isinstance(entry, dict) and entry.get("correlationId") == correlation_id:
            if entry.get("$type") != "response":
                return None
            request = None
            for back in range(position - 1, -1, -1):
                request = _entry(history, back, "request", correlation_id)
                if request is not None:
                    break
            hash_ = runs.get(correlation_id, {}).get("requestHash") if isinstance(runs, dict) else None
            return StoredRun(correlation_id, request, entry, hash_)
    return None


def result_from_stored(run: StoredRun) -> TurnResult:
    """The run's result from its stored entries: `agents.turn_result`, as the entity computes it."""
    return turn_result(run.correlation_id, run.request, run.response)
