"""One read of a session through the durable client: whether it exists, its state document
(parsed JSON), and whether this build can read it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import azure.durable_functions as df

from state import StateError, check_state, parse_state_json

from ..stored import StoredDocument
from ._binding import DurableClient, rpc_base_url
from ._rpc import read_entity_text


@dataclass(frozen=True)
class Snapshot:
    """One read of a session: whether it exists and its state document (parsed JSON).

    A session a delete left a tombstone of (hosting.stored) does not exist; its `document` is
    the tombstone and `deleted` is set."""

    exists: bool
    document: Any
    deleted: bool = False

    @property
    def stored(self) -> StoredDocument:
        """The document, read through the one reader of stored documents."""
        return StoredDocument(self.document)


@dataclass(frozen=True)
class StateCheck:
    """A stored state checked: why this build cannot use it (`problem`), or its size in bytes
    (`size_bytes`: the UTF-8 text the entity writes for the parsed document, as
    `StoredDocument.size_bytes` counts it; never the length of the text a read returned, which
    is the extension's serialisation of it)."""

    problem: str | None
    size_bytes: int = 0


def checked_state(document: Any) -> StateCheck:
    """The check of `state_problem`, with the size it measures on the way (one serialisation of
    the document for both: the turn's size limit needs it too)."""
    if isinstance(document, Unparsable):
        return StateCheck(document.reason)
    try:
        return StateCheck(None, check_state(document))
    except StateError as error:
        return StateCheck(str(error))


def state_problem(document: Any) -> str | None:
    """Why a stored state cannot be used by this build, or None when the entity can read it.

    `state.check_state`: the very check `load_state` applies in the entity, on the parsed
    document, so the HTTP side refuses exactly what the entity would refuse, at once, instead
    of letting a client wait for a turn that will never run.
    """
    return checked_state(document).problem


@dataclass(frozen=True)
class Unparsable:
    """The document of a session whose stored state is not JSON at all (why, in `reason`)."""

    reason: str


async def read_session(client: DurableClient, entity_id: df.EntityId) -> Snapshot:
    """Read a session's entity state once.

    Over the binding's `rpcBaseUrl` (hosting.client._rpc) the state arrives as text (the
    extension's serialisation of it, not the stored bytes) and is parsed
    once, strictly, as the entity parses it; a client without one (a test's own) reads through
    its `read_entity_state`, whose document is written out and parsed the same way, so NaN and
    Infinity, which JSON does not have, are refused whichever way the state came."""
    base = rpc_base_url(client)
    text: str | bytes
    if base is not None:
        found = await read_entity_text(base, entity_id)
        if found is None:
            return Snapshot(False, None)
        text = found
    else:
        try:
            response = await client.read_entity_state(entity_id)
        except json.JSONDecodeError as error:
            # The SDK parses the state it reads: the entity exists, its state is not JSON.
            reason = f"the state is not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})"
            return Snapshot(True, Unparsable(reason))
        if not response.entity_exists:
            return Snapshot(False, None)
        state = response.entity_state
        text = state if isinstance(state, str | bytes) else json.dumps(state)
    try:
        document = parse_state_json(text)
        if isinstance(document, str):
            # Some hosts hand back the state's text as a JSON string (encoded twice).
            document = parse_state_json(document)
    except StateError as error:
        return Snapshot(True, Unparsable(str(error)))
    if StoredDocument(document).is_tombstone:
        return Snapshot(False, document, deleted=True)
    return Snapshot(True, document)
