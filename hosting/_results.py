"""Reading a run's outcome straight from a stored state's JSON, without loading the whole model.

The HTTP side polls entity state while it waits; for a long history, building the full typed
state on every poll would cost milliseconds each time. The `data.runs` index (schema 1.2.0) points
at the two entries of a finished run, so only those are looked at.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from state import response_failed

JSON = Any


@dataclass(frozen=True)
class StoredRun:
    """A finished run found in a state's JSON: its entries and the hash of its request."""

    correlation_id: str
    request: dict[str, JSON] | None
    response: dict[str, JSON]
    request_hash: str | None

    @property
    def failed(self) -> bool:
        """True when the turn failed (a `failure`, or an older writer's all-error response)."""
        return response_failed(self.response)


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


def asked_in(request: dict[str, JSON] | None) -> list[tuple[str, str]] | None:
    """The (role, text) pairs a stored request entry asked, or None when it is not known."""
    if request is None:
        return None
    return [(str(m.get("role")), _text_of(m)) for m in request.get("messages") or [] if isinstance(m, dict)]


def same_request(run: StoredRun, asked: list[tuple[str, str]]) -> bool:
    """Whether a stored run answered the request `asked` (False only when it provably did not)."""
    stored = asked_in(run.request)
    return stored is None or stored == asked


def _text_of(message: dict[str, JSON]) -> str:
    return "".join(
        c.get("text") or ""
        for c in message.get("contents") or []
        if isinstance(c, dict) and c.get("$type") == "text"
    )


def response_text(response: dict[str, JSON]) -> str:
    """The answer's text: the text of the last assistant message that has any."""
    for message in reversed(response.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "assistant":
            text = _text_of(message)
            if text:
                return text
    return ""


def _structured(request: dict[str, JSON] | None, text: str) -> JSON:
    if request is None or request.get("responseType") != "json":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def failure_of(response: dict[str, JSON]) -> dict[str, JSON] | None:
    """The error of a failed response entry as `{code, message, retryable, status}`."""
    failure = response.get("failure")
    if isinstance(failure, dict):
        return {
            "code": str(failure.get("code") or "model_error"),
            "message": str(failure.get("message") or ""),
            "retryable": bool(failure.get("retryable", False)),
            "status": failure.get("status") if isinstance(failure.get("status"), int) else None,
        }
    if not response_failed(response):
        return None
    # An older writer's failed turn: only error contents to go on.
    contents = [c for m in response.get("messages") or [] for c in (m.get("contents") or [])]
    first = contents[0] if contents else {}
    return {
        "code": str(first.get("errorCode") or "model_error"),
        "message": str(first.get("message") or ""),
        "retryable": False,
        "status": None,
    }


def result_from_stored(run: StoredRun) -> dict[str, JSON]:
    """The run's result in `TurnResult.to_json()` shape, rebuilt from its stored entries."""
    error = failure_of(run.response)
    text = "" if error else response_text(run.response)
    return {
        "correlationId": run.correlation_id,
        "status": "failed" if error else "succeeded",
        "text": text,
        "messages": list(run.response.get("messages") or []),
        "usage": run.response.get("usage"),
        "structured": None if error else _structured(run.request, text),
        "error": error,
    }
