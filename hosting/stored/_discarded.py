"""Runs a reset discarded: the reset keeps their ids, so they answer 410 instead of `pending` forever
and a retried Idempotency-Key is refused instead of running again in the new history.

The ids live in the reset session's state as `data.discardedRuns` (a list, most recent last, at
most `MAX_DISCARDED_RUNS`): a property both published schemas allow in `data` and that the state
package keeps verbatim through every later load and save.
"""

from __future__ import annotations

import json
from typing import Any

from state import AgentState, dump_state

from .._errors import ProblemCode, ProblemError
from ._runs import compact_text

DISCARDED_KEY = "discardedRuns"
REFUSED_KEY = "refusedRuns"
"""Turns refused without a record, kept by id (hosting._unrecorded); a reset discards them too."""
MAX_DISCARDED_RUNS = 500
"""How many discarded run ids a session remembers (about 35 bytes each)."""


def listed_ids(document: Any, key: str) -> list[str]:
    """The run ids a parsed state document lists under `data[key]` (`DISCARDED_KEY`,
    `REFUSED_KEY`), most recent last; anything else there is ignored."""
    data = document.get("data") if isinstance(document, dict) else None
    ids = data.get(key) if isinstance(data, dict) else None
    return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []


def text_lists(text: str, key: str, correlation_id: str) -> bool:
    """Whether stored state text lists `correlation_id` under `data[key]`, parsing it only when
    the key appears at all (the entity asks this of every turn)."""
    return f'"{key}"' in text and correlation_id in listed_ids(json.loads(text), key)


def discarded_ids(document: Any) -> list[str]:
    """The run ids earlier resets of this session discarded (a parsed state document)."""
    return listed_ids(document, DISCARDED_KEY)


def is_discarded(document: Any, correlation_id: str) -> bool:
    """Whether a reset of this session discarded the run `correlation_id`."""
    return correlation_id in discarded_ids(document)


def text_is_discarded(text: str, correlation_id: str) -> bool:
    """`is_discarded` on stored state text, parsing it only when it has discarded runs at all."""
    return text_lists(text, DISCARDED_KEY, correlation_id)


def _run_ids(document: Any) -> list[str]:
    """Every run id a state knows, oldest first: archived runs still indexed, the runs index,
    history entries of writers before the index, and turns refused by id only."""
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, dict):
        return []
    archive = data.get("archive")
    archived = archive.get("runs") if isinstance(archive, dict) else None
    ids = [i for i in (archived if isinstance(archived, dict) else {}) if isinstance(i, str)]
    ids += [i for i in (data.get("runs") or {}) if isinstance(i, str)]
    for entry in data.get("conversationHistory") or []:  # states written before the runs index
        cid = entry.get("correlationId") if isinstance(entry, dict) else None
        if isinstance(cid, str):
            ids.append(cid)
    ids += listed_ids(document, REFUSED_KEY)
    return list(dict.fromkeys(ids))


def reset_text(old_text: str | None, fresh_state: AgentState) -> str:
    """The state text a reset stores: `fresh_state` (an empty history) remembering the ids of the
    runs the reset discards."""
    fresh = dump_state(fresh_state)
    if old_text is None:
        return fresh
    old = json.loads(old_text)
    remembered = discarded_ids(old)
    remembered += [i for i in _run_ids(old) if i not in remembered]
    if not remembered:
        return fresh
    document = json.loads(fresh)
    document["data"][DISCARDED_KEY] = remembered[-MAX_DISCARDED_RUNS:]
    return compact_text(document)


def discarded_problem(
    agent: str, session_id: str, correlation_id: str, *, deleted: bool = False
) -> ProblemError:
    """410: the run belonged to a history a reset or delete cleared (`deleted`: the session is
    deleted now); its outcome is gone."""
    cleared = "the session was deleted" if deleted else "a reset (or delete) cleared its history"
    return ProblemError(
        ProblemCode.RUN_DISCARDED,
        f"run {correlation_id!r} of session {session_id!r} (agent {agent!r}) is gone: {cleared}. "
        "Its outcome is not kept and it is not run again; send a new Idempotency-Key "
        "(or correlation_id) to run the request in a new history",
        agent=agent,
        session_id=session_id,
        correlation_id=correlation_id,
    )
