"""Runs that end without a record of their own in the history, and how they are still answered.

Every run id the API hands out must reach a terminal answer a client can read from the session's
stored state. Most runs have one: their request and response entries. Three kinds do not:

* runs a reset or a delete discarded: their ids are in `data.discardedRuns` (hosting._discarded,
  hosting._deleted) and they answer **410 `run_discarded`**;
* turns refused (`session_too_large`) when even the compact record of the refusal would not fit
  in the session's headroom (many requests racing past the HTTP-side check of a nearly full
  session): their ids are in `data.refusedRuns` (most recent last, at most `MAX_REFUSED_BYTES`
  of ids) and they answer **failed `session_too_large`**, like a recorded refusal.

`unrecorded_run` is what the HTTP side's wait asks once it found no record.
"""

from __future__ import annotations

import json
from typing import Any

from agents import TurnResult, turn_result

from .._errors import ProblemCode
from ._discarded import REFUSED_KEY, discarded_problem, is_discarded, listed_ids, text_lists
from ._runs import StoredRun, compact_text

MAX_REFUSED_BYTES = 16 * 1024
"""Budget of `data.refusedRuns` (its ids' JSON text): about 400 ids of 36 characters. The entity
keeps refusal records within `max_session_bytes` + 48 KiB, so records plus this list stay within
the 64 KiB headroom (1 MiB by default, what the local host and the Durable Task Scheduler store)."""

REFUSED_MESSAGE = (
    "the session is over its size limit (max_session_bytes), so this turn was refused; the session "
    "was too full to hold even the record of the refusal, so only the run's id was kept. Start a new "
    "session (or reset this one) to continue"
)


def refused_ids(document: Any) -> list[str]:
    """The ids of the turns refused without a record (a parsed state document)."""
    return listed_ids(document, REFUSED_KEY)


def text_is_refused(text: str, correlation_id: str) -> bool:
    """Whether stored state text lists `correlation_id` as refused, parsing only when it may."""
    return text_lists(text, REFUSED_KEY, correlation_id)


def with_refused(text: str, correlation_id: str) -> str:
    """The state text with `correlation_id` added to `data.refusedRuns` (most recent last; the
    oldest ids go once the list passes `MAX_REFUSED_BYTES`). `text` is a readable state."""
    document = json.loads(text)
    ids = [i for i in refused_ids(document) if i != correlation_id] + [correlation_id]
    while len(ids) > 1 and len(json.dumps(ids, ensure_ascii=False).encode("utf-8")) > MAX_REFUSED_BYTES:
        ids.pop(0)
    document["data"][REFUSED_KEY] = ids
    return compact_text(document)


def refused_entry(correlation_id: str) -> dict[str, Any]:
    """The response entry (wire form) a run refused without a record stands for."""
    return {
        "$type": "response",
        "correlationId": correlation_id,
        "messages": [],
        "failure": {
            "code": str(ProblemCode.SESSION_TOO_LARGE),
            "message": REFUSED_MESSAGE,
            "retryable": False,
            "status": None,
        },
    }


def refused_result(correlation_id: str) -> TurnResult:
    """The failed result of a run refused without a record (`agents.turn_result` of its entry)."""
    return turn_result(correlation_id, None, refused_entry(correlation_id))


def unrecorded_run(
    document: Any, agent: str, session_id: str, correlation_id: str, *, deleted: bool = False
) -> StoredRun | None:
    """A run with no entries of its own, answered from the state's id lists: raises 410
    `run_discarded` for a run a reset or delete discarded (`deleted`: the session is a tombstone
    now), returns the failed run of a refusal kept by id only, else None (not run yet)."""
    if is_discarded(document, correlation_id):
        raise discarded_problem(agent, session_id, correlation_id, deleted=deleted)
    if correlation_id in refused_ids(document):
        return StoredRun(correlation_id, None, refused_entry(correlation_id), None)
    return None
