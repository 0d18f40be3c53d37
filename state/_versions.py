"""Schema versions: what this build writes, what it reads, and the upgrade steps between minors."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ._errors import IncompatibleStateVersion

CURRENT_SCHEMA_VERSION = "1.8.0"
"""The version `dump_state` writes. Any 1.x.y loads; older minors are upgraded step by step."""

# One line per version: what it added. Keep in step with UPGRADE_STEPS and docs/state.md.
CHANGELOG: dict[str, str] = {
    "1.0.0": "conversationHistory of request/response entries, messages and the content types",
    "1.1.0": "optional request orchestrationId (the orchestration that sent the request)",
    "1.2.0": "optional data.stateBag, data.runs, data.serviceThreadId and response failure",
    "1.3.0": "optional data.archive (older entries in chunks), data.lastActivityAt, data.discardedRuns",
    "1.4.0": "optional data.refusedRuns (refused turns by id), data.deletedAt (a deleted session tombstone)",
    "1.5.0": "optional data.userId (the user the session belongs to)",
    "1.6.0": "optional data.activeTurn (the turn in progress and its finished steps), data.queuedRuns",
    "1.7.0": "optional data.activeTurn.approvals (tool calls the turn in progress waits on, with decisions) "
    "and data.activeTurn.steered (runs sent with steer, waiting for the turn's next model call)",
    "1.8.0": "optional approvals of a response entry (the tool calls the run waited on, with decisions)",
}

SUPPORTED_MAJOR = 1
_SUPPORTED = f"this build reads {SUPPORTED_MAJOR}.x (current {CURRENT_SCHEMA_VERSION})"
_VERSION_RE = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")

Doc = dict[str, Any]
UpgradeStep = Callable[[Doc], None]


def parse_version(found: object) -> tuple[int, int, int]:
    """Check a `schemaVersion` value and return it as (major, minor, patch).

    Raises IncompatibleStateVersion naming what was found when it is missing, not a
    version string, or of another major version.
    """
    if found is _MISSING:
        raise IncompatibleStateVersion(
            f"schemaVersion is missing: {_SUPPORTED}", found=None, supported=_SUPPORTED
        )
    if not isinstance(found, str):
        raise IncompatibleStateVersion(
            f"schemaVersion {_describe(found)} is not a version string: {_SUPPORTED}",
            found=found,
            supported=_SUPPORTED,
        )
    if not found.strip():
        raise IncompatibleStateVersion(
            f"schemaVersion is empty: {_SUPPORTED}", found=found, supported=_SUPPORTED
        )
    match = _VERSION_RE.fullmatch(found)
    if match is None:
        raise IncompatibleStateVersion(
            f"schemaVersion {found!r} is not a <major>.<minor>.<patch> version: {_SUPPORTED}",
            found=found,
            supported=_SUPPORTED,
        )
    major, minor, patch = (int(g) for g in match.groups())
    if major != SUPPORTED_MAJOR:
        raise IncompatibleStateVersion(
            f"schemaVersion {found!r} is not supported: {_SUPPORTED}", found=found, supported=_SUPPORTED
        )
    return major, minor, patch


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()
MISSING: Any = _MISSING
"""Pass to `parse_version` when the document has no `schemaVersion` at all."""


def _describe(value: object) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{text} ({json_kind(value)})"


def json_kind(value: object) -> str:
    """The JSON name of a parsed value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


# --- upgrade steps -------------------------------------------------------------------------
# Each step takes a document of minor N (already validated) and makes it a document of minor
# N+1, in place. The steps run on our own parsed copy, never on the caller's text.


def _upgrade_1_0_to_1_1(doc: Doc) -> None:
    # 1.1 only added the optional request `orchestrationId` and renamed nothing, so every 1.0
    # document already is a 1.1 document. The step exists so that the chain is explicit.
    del doc


def _upgrade_1_1_to_1_2(doc: Doc) -> None:
    # 1.2 properties are all optional, so absence is fine. A `runs` index found in a document
    # labelled older than 1.2 was carried through (as an unknown property) by a writer that
    # did not maintain it, so it may miss the runs that writer appended: it is dropped here
    # and rebuilt from the history when next needed (it is derived data, never history).
    doc["data"].pop("runs", None)


def _upgrade_1_2_to_1_3(doc: Doc) -> None:
    # 1.3 adds only the optional `data.archive`. A 1.2 state has none: its whole history is in
    # the document and the writer archives it on the first turn after the upgrade. An `archive`
    # found in a document labelled 1.2 was carried through by a 1.2 writer, which only appends
    # entries and never removes any: the references still describe the entries before
    # `conversationHistory[0]`, so they are kept (dropping them would lose history).
    del doc


def _upgrade_1_3_to_1_4(doc: Doc) -> None:
    # 1.4 adds the optional `data.refusedRuns` and `data.deletedAt`. Found in a document labelled
    # 1.3, they were carried through by a 1.3 writer: refused ids stay true (that writer never
    # runs them), and a tombstone a 1.3 writer ran a turn on has a history again, which is what
    # makes it a live session (a tombstone is an empty history with the mark), so both are kept.
    del doc


def _upgrade_1_4_to_1_5(doc: Doc) -> None:
    # 1.5 adds only the optional `data.userId`. Found in a document labelled 1.4, it was set by a
    # 1.5 writer and carried through by a 1.4 one (which keeps unknown properties): the session
    # still belongs to that user, so it is kept (dropping it would open the session to everyone).
    del doc


def _upgrade_1_5_to_1_6(doc: Doc) -> None:
    # 1.6 adds the optional `data.activeTurn` and `data.queuedRuns`. Found in a document labelled
    # 1.5 or older, they were carried through by an older writer, which runs a turn whole: a run
    # it recorded meanwhile (its id in `runs`) is finished, so its progress or its queued request
    # is stale and would run it twice; those are dropped, the rest is kept.
    data = doc["data"]
    runs = data.get("runs")
    done = set(runs) if isinstance(runs, dict) else set()
    active = data.get("activeTurn")
    if isinstance(active, dict) and _run_id(active.get("request")) in done:
        del data["activeTurn"]
    queued = data.get("queuedRuns")
    if isinstance(queued, list):
        data["queuedRuns"] = [q for q in queued if _run_id(q) not in done]


def _upgrade_1_6_to_1_7(doc: Doc) -> None:
    # 1.7 adds only the optional `approvals` of `data.activeTurn`. A 1.6 writer rewrites the turn
    # in progress from what it knows after each step, so it never leaves approvals behind; the
    # turn itself (the request, its finished steps) is read the same by both.
    del doc


def _upgrade_1_7_to_1_8(doc: Doc) -> None:
    # 1.8 adds only the optional `approvals` of a response entry. A 1.7 writer records a turn's
    # response without them (its approvals left with the turn in progress), so a 1.7 document has
    # none; one found there was written by a 1.8 writer and carried through (an entry keeps its
    # unknown properties), and still tells how that run's calls were decided, so it is kept.
    del doc


def _run_id(request: Any) -> Any:
    return request.get("correlationId") if isinstance(request, dict) else None


UPGRADE_STEPS: dict[int, UpgradeStep] = {
    0: _upgrade_1_0_to_1_1,
    1: _upgrade_1_1_to_1_2,
    2: _upgrade_1_2_to_1_3,
    3: _upgrade_1_3_to_1_4,
    4: _upgrade_1_4_to_1_5,
    5: _upgrade_1_5_to_1_6,
    6: _upgrade_1_6_to_1_7,
    7: _upgrade_1_7_to_1_8,
}
"""minor version N -> the step that turns a 1.N document into a 1.(N+1) document."""

CURRENT_MINOR = parse_version(CURRENT_SCHEMA_VERSION)[1]


def upgrade(doc: Doc, minor: int) -> None:
    """Run every registered step from `minor` up to the current minor (newer minors: nothing)."""
    for step_minor in range(minor, CURRENT_MINOR):
        UPGRADE_STEPS[step_minor](doc)
