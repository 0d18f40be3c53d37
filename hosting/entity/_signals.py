"""Signals an entity operation sends, carried out in its batch response.

The Durable extension reads the signals of an out-of-process entity batch from the `signals`
array of the batch response (`{"target": {"name", "key"}, "name", "input"}`, the input as JSON
text), and sends them once the batch is committed, in the same commit as the new state
(azure-functions-durable-extension, `TaskEntityShim.ExecuteOutOfProcBatch` and
`OutOfProcResult.Signals`); the target's name is sent lower-cased, the one the extension's
`EntityId` gives every other call. The Python SDK writes that array but gives entity code no way to
fill it, so hosting collects the signals of a batch here and adds them to the SDK's response.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypedDict


class SignalTarget(TypedDict):
    name: str
    key: str


class Signal(TypedDict):
    """One signal in a batch response, as the extension reads it: its input as JSON text."""

    target: SignalTarget
    name: str
    input: str


_BATCH: contextvars.ContextVar[list[Signal] | None] = contextvars.ContextVar(
    "dafx_batch_signals", default=None
)


class NoBatch(RuntimeError):
    """A signal sent outside a batch: nothing would deliver it."""


def send_signal(entity_name: str, key: str, operation: str, value: object) -> None:
    """Signal `operation` with `value` to the entity `entity_name@key` when the batch commits."""
    signals = _BATCH.get()
    if signals is None:
        raise NoBatch(f"signal {operation!r} to {entity_name}@{key} outside an entity batch")
    # The extension takes a signal's target name as written (it deserialises the EntityId without
    # the lower-casing its constructor applies: EntityScheduler/EntityId.cs), while every client
    # call and orchestration action reaches the lower-cased name: `dafx-Writer` would be another
    # instance than the session.
    target: SignalTarget = {"name": entity_name.lower(), "key": key}
    signals.append({"target": target, "name": operation, "input": json.dumps(value)})


@contextmanager
def collecting() -> Iterator[list[Signal]]:
    """Collect the signals the operations of one batch send (the batch runs in this thread)."""
    signals: list[Signal] = []
    token = _BATCH.set(signals)
    try:
        yield signals
    finally:
        _BATCH.reset(token)


_NO_SIGNALS = '"signals": []}'
"""How the SDK's response text ends: `EntityState.to_json_string` dumps `signals` last, and the
SDK itself never fills it (no entity API sends one)."""


def with_signals(response: str, signals: list[Signal]) -> str:
    """The SDK's batch response text with `signals` added to its `signals` array."""
    if not signals:
        return response
    if response.endswith(_NO_SIGNALS):
        # Spliced, not parsed and dumped again: the response holds the whole state (tens of KB)
        # and a turn's every step signals.
        return f'{response[: -len(_NO_SIGNALS)]}"signals": {json.dumps(signals)}}}'
    document = json.loads(response)
    document["signals"] = [*(document.get("signals") or []), *signals]
    return json.dumps(document)
