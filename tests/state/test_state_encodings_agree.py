"""Every encoding of the state format accepts exactly what `load_state` accepts.

The format is written down in `state/_models.py` (the pydantic models users build), `state/_wire.py`
(the TypedDict spec `load_state` validates with), `state/_check.py` (the fast yes/no walk, whose
field table is generated from `_wire`) and `schemas/durable-agent-entity-state.json` (the published
JSON Schema). These property tests hold each of them equal to `load_state` on generated valid
states and on the same states with one node changed or removed.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from pydantic import ValidationError
from state_helpers import our_validator
from state_strategies import SETTINGS, mutated_doc, state_doc

from state import AgentRequest, AgentResponse, StateError, load_state
from state._check import document_ok
from state._versions import parse_version

SCHEMA = our_validator()


def _loads(doc: Any) -> bool:
    try:
        load_state(json.dumps(doc))
    except StateError:
        return False
    return True


def _models_accept(doc: dict[str, Any], *, strict: bool) -> bool:
    """The pydantic models' verdict on every entry: strictly (the spec they encode), or the way
    `AgentState.entries` builds them from a loaded state (by alias, lax)."""
    history = doc["data"].get("conversationHistory", [])
    try:
        for raw in history:
            kind = raw.get("$type") if isinstance(raw, dict) else None
            if kind not in ("request", "response"):
                return False
            model = AgentRequest if kind == "request" else AgentResponse
            if strict:
                # By the wire's names only: an unknown key that happens to be a field's Python name
                # (`author_name` beside `authorName`) is kept as an unknown key, as load_state keeps it.
                model.model_validate(raw, strict=True, by_alias=True, by_name=False)
            else:
                model.model_validate(raw, by_alias=True, by_name=False)
    except ValidationError:
        return False
    return True


@SETTINGS
@given(state_doc)
def test_every_encoding_accepts_generated_states(doc: dict[str, Any]) -> None:
    assert _loads(doc)
    assert document_ok(doc)
    assert SCHEMA.is_valid(doc), [e.message for e in SCHEMA.iter_errors(doc)][:3]
    assert _models_accept(doc, strict=True) and _models_accept(doc, strict=False)


@SETTINGS
@given(mutated_doc())
def test_the_schema_accepts_exactly_what_load_state_accepts(doc: dict[str, Any]) -> None:
    loads = _loads(doc)
    assert SCHEMA.is_valid(doc) is loads, (loads, [e.message for e in SCHEMA.iter_errors(doc)][:3])


@SETTINGS
@given(mutated_doc())
def test_the_fast_check_and_version_policy_accept_exactly_what_load_state_accepts(
    doc: dict[str, Any],
) -> None:
    # The fast check knows the shape only; the version policy (a 1.x label) comes on top.
    assert _loads(doc) is (document_ok(doc) and not _version_refused(doc))


def _version_refused(doc: Any) -> bool:
    try:
        parse_version(doc["schemaVersion"])
    except (StateError, KeyError, TypeError):
        return True
    return False


@SETTINGS
@given(mutated_doc())
def test_the_models_accept_exactly_the_entries_load_state_accepts(doc: dict[str, Any]) -> None:
    data = doc.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("conversationHistory", []), list):
        return  # the mutation hit the root, not an entry: nothing for the entry models to judge
    rest = {k: v for k, v in data.items() if k != "conversationHistory"}
    if not _loads({**doc, "data": rest}):
        return  # the mutation broke something outside the history
    loads = _loads(doc)
    assert _models_accept(doc, strict=True) is loads
    if loads:  # every entry of a loaded state can be built as a model
        assert _models_accept(doc, strict=False)


def test_the_fast_check_tables_are_generated_from_the_wire_spec() -> None:
    from typing import get_type_hints

    from state import _check, _wire
    from state._models import KNOWN_CONTENT_TYPES

    assert set(_check._CONTENT) == set(KNOWN_CONTENT_TYPES)
    text_spec, text_required = _check._CONTENT["text"]
    assert text_spec == {"text": _check._REQ_STR} and text_required == ("text",)
    for name, typed_dict in (("request", _wire._Request), ("response", _wire._Response)):
        fields = set(get_type_hints(typed_dict)) - {"$type"}
        table = _check._REQUEST if name == "request" else _check._RESPONSE
        assert set(table) == fields, name
