"""The marks hosting writes into a stored document, and the runs they answer without a record.

Every run id the API hands out must reach a terminal answer a client can read from the session's
stored state. Most runs have one: their request and response entries. Two kinds do not:

* runs a reset or a delete discarded: a reset keeps their ids (`data.discardedRuns`, at most
  `MAX_DISCARDED_RUNS`, most recent last), so they answer 410 `run_discarded` instead of
  `pending` forever, and a retried Idempotency-Key is refused instead of running again in the
  new history. A delete keeps them in a tombstone (below);
* turns refused (`session_too_large`) when even the compact record of the refusal would not fit
  in the session's headroom (many requests racing past the submit check of a nearly full
  session): their ids are in `data.refusedRuns` (at most `MAX_REFUSED_BYTES` of ids) and they
  answer failed `session_too_large`, like a recorded refusal.

A delete leaves a tombstone: the Durable extension reports a deleted entity exactly like one that
was never created, so from the outside a deleted session and a new one whose first turn is still
queued look the same. The tombstone is an empty 1.4.0 history with `data.deletedAt` and the
discarded ids, no content; the HTTP side treats it as no session at all (404, not listed); a new
turn starts a fresh history on it (keeping the discarded ids); idle expiry removes it for good one
TTL after the delete. A delete with nothing to remember (no runs, or an unreadable state) removes
the entity outright.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agents import TurnResult, turn_result
from state import AgentState, TurnFailure, compact_json, dump_state

from .._errors import ProblemCode
from ._document import StoredDocument, StoredRun, response_entry

MAX_DISCARDED_RUNS = 500
"""How many discarded run ids a session remembers (about 35 bytes each)."""

MAX_REFUSED_BYTES = 16 * 1024
"""Budget of `data.refusedRuns` (its ids' JSON text): about 400 ids of 36 characters. The entity
keeps refusal records within `max_session_bytes` + 48 KiB, so records plus this list stay within
the 64 KiB headroom (1 MiB by default, what the local host and the Durable Task Scheduler store)."""

REFUSED_MESSAGE = (
    "the session is over its size limit (max_session_bytes), so this turn was refused; the session "
    "was too full to hold even the record of the refusal, so only the run's id was kept. Start a new "
    "session (or reset this one) to continue"
)


def reset_text(old: StoredDocument | None, fresh_state: AgentState) -> str:
    """The state text a reset stores: `fresh_state` (an empty history) remembering the ids of the
    runs the reset discards (those of `old`, the document it replaces), still belonging to `old`'s
    owner (a reset or delete empties a session; it never hands it to another user)."""
    if old is not None and old.owner is not None:
        fresh_state.user_id = old.owner
    fresh = dump_state(fresh_state)
    if old is None:
        return fresh
    remembered = old.discarded_ids
    # Steer runs too: answered as the run they joined, they would read `pending` once it is gone.
    remembered += [i for i in dict.fromkeys([*old.run_ids(), *old.steer_ids()]) if i not in remembered]
    if not remembered:
        return fresh
    document = StoredDocument.of_state(fresh_state)
    return compact_json(document.marked(discarded=remembered[-MAX_DISCARDED_RUNS:]))


def tombstone_text(old: StoredDocument | None, now: str, *, erase: bool = False) -> str | None:
    """The state a delete leaves (`now`: RFC 3339), or None when there is nothing to remember:
    no state, an unreadable one, a tombstone already (a second delete removes it for good), or
    no runs at all. `erase` (a user's erasure): the tombstone names no user, so its runs still
    answer 410 and nothing in it is the user's; a tombstone is then kept, without its owner."""
    if erase and old is not None and old.is_tombstone:
        return compact_json(old.marked(owner=None))
    if old is None or old.is_tombstone:
        return None
    fresh = AgentState.new()
    fresh.last_activity_at = now  # idle expiry removes the tombstone one TTL after the delete
    try:
        cleared = StoredDocument.parse(reset_text(old, fresh))
    except (ValueError, TypeError, AttributeError):
        return None  # not a state's shape: the documented way out removes it all
    if cleared is None or not cleared.discarded_ids:
        return None
    if erase:
        return compact_json(cleared.marked(deleted_at=now, owner=None))
    return compact_json(cleared.marked(deleted_at=now))


def revived_text(tombstone: StoredDocument, user: str | None = None) -> str:
    """A tombstone as the start of a new history: the same state without `deletedAt`, belonging
    to its owner, or to `user` (who starts the new history) when it had none."""
    if tombstone.owner is None and user is not None:
        return compact_json(tombstone.marked(deleted_at=None, owner=user))
    return compact_json(tombstone.marked(deleted_at=None))


def with_refused(text: str, correlation_id: str) -> str:
    """The state text with `correlation_id` added to `data.refusedRuns` (most recent last; the
    oldest ids go once the list passes `MAX_REFUSED_BYTES`). `text` is a readable state."""
    document = StoredDocument(json.loads(text))
    ids = [i for i in document.refused_ids if i != correlation_id] + [correlation_id]
    while len(ids) > 1 and len(json.dumps(ids, ensure_ascii=False).encode("utf-8")) > MAX_REFUSED_BYTES:
        ids.pop(0)
    return compact_json(document.marked(refused=ids))


def refused_entry(correlation_id: str) -> dict[str, Any]:
    """The response entry (wire form) a run refused without a record stands for."""
    failure = TurnFailure(
        code=str(ProblemCode.SESSION_TOO_LARGE), message=REFUSED_MESSAGE, retryable=False, status=None
    )
    return response_entry(correlation_id, failure.model_dump(mode="json"))


def refused_result(correlation_id: str) -> TurnResult:
    """The failed result of a run refused without a record (`agents.turn_result` of its entry)."""
    return turn_result(correlation_id, None, refused_entry(correlation_id))


@dataclass(frozen=True)
class Unrecorded:
    """A run with no entries of its own that the document still answers: discarded by a reset or
    delete (`run` None; `deleted`: the session is a tombstone now), or refused by id (`run`: its
    failed answer)."""

    correlation_id: str
    run: StoredRun | None = None
    deleted: bool = False

    @property
    def discarded(self) -> bool:
        return self.run is None


def unrecorded_run(
    document: StoredDocument, correlation_id: str, *, deleted: bool = False
) -> Unrecorded | None:
    """How the document answers a run without entries of its own, or None (not run yet)."""
    if correlation_id in document.discarded_ids:
        return Unrecorded(correlation_id, deleted=deleted)
    if correlation_id in document.refused_ids:
        refused = StoredRun(correlation_id, None, refused_entry(correlation_id), None)
        return Unrecorded(correlation_id, refused)
    return None
