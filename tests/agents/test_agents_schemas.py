"""Caller-supplied schemas: no reference leaves the document, no pattern can backtrack."""

from __future__ import annotations

import json
import pathlib
import threading
from typing import Any

import pytest
import referencing.exceptions

from agents._schemas import UnsafeSchema, check_schema_references, schema_validator
from agents._structured import ResponseFormat, StructuredOutputError

# Python's re needs minutes (or forever) for these on the inputs below; RE2 answers at once.
CATASTROPHIC = "^(a+)+$"
LONG_NEAR_MISS = "a" * 200_000 + "!"


@pytest.mark.parametrize(
    ("keyword", "target"),
    [
        ("$ref", "http://169.254.169.254/latest/meta-data"),
        ("$ref", "https://example.com/schema.json"),
        ("$ref", "file:///etc/passwd"),
        ("$ref", "other.json#/defs/x"),
        ("$dynamicRef", "https://example.com/dyn"),
    ],
)
def test_references_outside_the_document_are_refused_naming_them(keyword: str, target: str) -> None:
    schema = {"type": "object", "properties": {"a": {keyword: target}}}
    with pytest.raises(ValueError, match="points outside this schema") as caught:
        ResponseFormat.parse(schema)
    assert target in str(caught.value)
    assert "#/properties/a" in str(caught.value)


def test_references_inside_the_document_still_work() -> None:
    schema = {
        "type": "object",
        "properties": {"inner": {"$ref": "#/$defs/Inner"}},
        "required": ["inner"],
        "$defs": {"Inner": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
    }
    fmt = ResponseFormat.parse(schema)
    assert fmt.parse_answer('{"inner": {"n": 1}}') == {"inner": {"n": 1}}
    with pytest.raises(StructuredOutputError, match="'n' is a required property"):
        fmt.parse_answer('{"inner": {}}')


def test_a_dangling_pointer_is_refused_up_front() -> None:
    with pytest.raises(UnsafeSchema, match="does not resolve"):
        check_schema_references({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}})


def test_a_property_named_like_a_keyword_is_not_a_reference() -> None:
    check_schema_references({"type": "object", "properties": {"$ref": {"type": "string"}}})


def test_the_validator_reads_no_file_even_when_asked_directly(tmp_path: pathlib.Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"const": "the file was read"}))
    validator = schema_validator({"$ref": secret.as_uri()})
    with pytest.raises(referencing.exceptions.Unresolvable) as caught:
        list(validator.iter_errors("anything"))
    assert "the file was read" not in str(caught.value)


def _finishes(work: Any, seconds: float = 20.0) -> Any:
    """Run `work` in a thread; fail (instead of hanging the suite) if it is still running later."""
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "pattern matching did not finish: it backtracks"
    return out[0]


def test_a_catastrophic_pattern_on_a_long_answer_answers_at_once() -> None:
    value = {"type": "string", "pattern": CATASTROPHIC}
    fmt = ResponseFormat.parse({"type": "object", "properties": {"v": value}, "required": ["v"]})

    def check() -> str:
        with pytest.raises(StructuredOutputError, match="does not match") as caught:
            fmt.parse_answer(json.dumps({"v": LONG_NEAR_MISS}))
        return str(caught.value)

    assert "does not match" in _finishes(check)
    assert fmt.parse_answer(json.dumps({"v": "aaaa"})) == {"v": "aaaa"}


def test_pattern_properties_and_additional_properties_match_on_re2() -> None:
    schema = {
        "type": "object",
        "patternProperties": {CATASTROPHIC: {"type": "integer"}},
        "additionalProperties": False,
    }
    validator = schema_validator(schema)
    errors = _finishes(lambda: [e.message for e in validator.iter_errors({LONG_NEAR_MISS: 1, "aaa": "x"})])
    assert any("does not match any of the regexes" in m for m in errors)
    assert any("'x' is not of type 'integer'" in m for m in errors)
    assert list(validator.iter_errors({"aaa": 1})) == []


def test_property_names_patterns_run_on_re2() -> None:
    validator = schema_validator({"type": "object", "propertyNames": {"pattern": CATASTROPHIC}})
    errors = _finishes(lambda: list(validator.iter_errors({LONG_NEAR_MISS: 1})))
    assert len(errors) == 1


@pytest.mark.parametrize("pattern", [r"(a)\1", r"a(?=b)", r"(?<!x)y"])
def test_patterns_re2_cannot_run_are_refused_naming_them(pattern: str) -> None:
    with pytest.raises(ValueError, match="is not supported") as caught:
        ResponseFormat.parse({"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}}})
    assert repr(pattern) in str(caught.value)


def test_unevaluated_properties_beside_pattern_properties_is_refused() -> None:
    with pytest.raises(UnsafeSchema, match="unevaluatedProperties"):
        check_schema_references(
            {"type": "object", "patternProperties": {"^a": {}}, "unevaluatedProperties": False}
        )
