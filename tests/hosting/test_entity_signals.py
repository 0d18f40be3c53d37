"""The signals a batch sends, added to the Durable SDK's own batch response text
(hosting.entity._signals): spliced into the text the SDK writes, parsed only for another shape."""

from __future__ import annotations

import json

from azure.durable_functions.models.entities import EntityState, OperationResult

from hosting.entity._signals import Signal, with_signals

SIGNALS: list[Signal] = [
    {"target": {"name": "dafx-assistant", "key": "s1"}, "name": "step", "input": json.dumps({"n": 1})},
    {"target": {"name": "dafx-assistant", "key": "s1"}, "name": "announce", "input": '"é \\" }"'},
]


def sdk_response() -> str:
    """A batch response exactly as the SDK writes it (`Entity.handle` → `to_json_string`)."""
    state = json.dumps({"schemaVersion": "1.7.0", "data": {"text": 'a "quoted" }] tail'}})
    results = [OperationResult(is_error=False, duration=3, execution_start_time_ms=1, result='{"ok": true}')]
    return EntityState(results=results, signals=[], entity_exists=True, state=state).to_json_string()


def test_signals_are_spliced_into_the_sdks_response() -> None:
    response = sdk_response()
    out = with_signals(response, SIGNALS)
    expected = {**json.loads(response), "signals": SIGNALS}
    assert json.loads(out) == expected
    # The state text is carried over byte for byte, not parsed and dumped again.
    assert out.startswith(response[: -len('"signals": []}')])


def test_another_shape_is_parsed_and_its_signals_kept() -> None:
    earlier = {"target": {"name": "other", "key": "k"}, "name": "op", "input": "null"}
    response = json.dumps({"signals": [earlier], "entityExists": True, "entityState": "{}", "results": []})
    assert json.loads(with_signals(response, SIGNALS))["signals"] == [earlier, *SIGNALS]


def test_no_signals_leave_the_response_as_it_is() -> None:
    response = sdk_response()
    assert with_signals(response, []) is response
