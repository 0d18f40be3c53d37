"""The one place that touches the Durable SDK's private `DurableEntityContext` fields.

The SDK keeps the incoming state as raw JSON text until user code asks for it, and writes raw
text back verbatim. Working on that representation directly means a failed operation can never
make the SDK re-encode (and so rewrite) a state it did not understand. The SDK has no public API
for it, so this module reads and writes `_state`, `_state_is_raw`, `_exists`, `_input` and
`_operation`, and keeps the two per-batch caches hosting plants on the context object
(`_dafx_loaded`: the live state of the last save; `_dafx_input`: the decoded operation input).
azure-functions-durable's floor (1.6.0) is the first release with `_state_is_raw`.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any, Protocol

import azure.durable_functions as df

from state import AgentState, load_state


class EntityContext(Protocol):
    """What hosting uses of the SDK's `DurableEntityContext` through its public API."""

    @property
    def entity_key(self) -> str: ...

    @property
    def operation_name(self) -> str | None: ...

    def set_result(self, result: Any) -> None: ...

    def destruct_on_exit(self) -> None: ...


@dataclass
class Loaded:
    """A stored state text and the state parsed from it (`text` "" for a new session)."""

    text: str
    state: AgentState


def stored_text(context: EntityContext) -> str | None:
    """The entity's stored state as JSON text, None when the entity has none."""
    sdk: Any = context
    state = sdk._state
    if state is None:
        return None
    if sdk._state_is_raw and isinstance(state, str):
        return state
    return json.dumps(state)


def store_text(context: EntityContext, text: str) -> None:
    """Store `text` as the entity's state, verbatim."""
    sdk: Any = context
    sdk._state = text
    sdk._state_is_raw = True
    sdk._exists = True


def cached_load(context: EntityContext) -> Loaded | None:
    """The state the batch's last save left (the live object), None when there is none."""
    cached: Loaded | None = getattr(context, "_dafx_loaded", None)
    return cached


def cache_load(context: EntityContext, loaded: Loaded | None) -> None:
    """Keep `loaded` for the batch's next operation (None: the live object is not reusable)."""
    sdk: Any = context
    sdk._dafx_loaded = loaded


def load(context: EntityContext) -> Loaded:
    """The session's state: the batch's live object when the stored text is still the one it
    saved, else parsed from the stored text; a fresh one for a new session. Raises
    `state.StateError` for a stored state that cannot be read (which is then left as it is)."""
    text = stored_text(context)
    cached = cached_load(context)
    if cached is not None and cached.text is text:
        return cached
    if text is None:
        return Loaded("", AgentState.new())
    return Loaded(text, load_state(text))


def operation_input(context: EntityContext) -> Any:
    """The operation input, decoded the way the Durable extension encodes it.

    The extension sends the JSON text of the input's JSON text; a host that sends it only once
    encoded is accepted too.
    """
    sdk: Any = context
    raw = sdk._input
    if raw is None:
        return None
    cached = getattr(sdk, "_dafx_input", None)
    if cached is not None and cached[0] is raw:  # decoded already for this operation (its span)
        return cached[1]
    value = json.loads(raw) if isinstance(raw, str) else raw
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    sdk._dafx_input = (raw, value)
    return value


def standalone_context(name: str, key: str, exists: bool, state: Any) -> EntityContext:
    """A context for a batch request the SDK could not read itself, holding `state` as given."""
    context = df.DurableEntityContext(name, key, exists, state)
    context._state_is_raw = state is not None  # as the SDK keeps a state it was given
    result: EntityContext = context
    return result


def start_operation(context: EntityContext, name: str | None, raw_input: Any) -> None:
    """Make `context` carry the operation `name` with its still encoded `raw_input`."""
    sdk: Any = context
    sdk._operation = name
    sdk._input = raw_input


def batch_outcome(context: EntityContext) -> tuple[Any, bool, bool]:
    """What a batch response carries of the entity after its operations: the state, whether it
    is raw JSON text, and whether the entity exists."""
    sdk: Any = context
    return sdk._state, bool(sdk._state_is_raw), bool(sdk._exists)
