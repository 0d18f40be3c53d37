"""JSON Schemas that may come from callers: checked before use, validated with no I/O and no slow regexes.

A caller's ``response_format`` is validated against what a model answers, so the schema is
untrusted input and the answer is untrusted too. Two things must not follow from them:

* **I/O on the caller's behalf.** jsonschema resolves a ``$ref`` it does not hold by fetching it
  (``http(s)://`` or ``file://``). Only references into the same document (``#...``) are accepted
  (`check_schema_references`), and every validator built here uses a registry whose retrieval
  refuses, so nothing outside the document is ever read even if a check were missed.
* **Regex backtracking.** Python's ``re`` backtracks: ``(a+)+$`` against a long answer runs for
  minutes while holding a worker. Patterns (``pattern``, ``patternProperties`` and the
  ``additionalProperties`` check that consults them) run on RE2 instead, which matches in linear
  time; a pattern RE2 cannot compile (backreferences, lookaround) is refused up front.
  ``unevaluatedProperties`` beside ``patternProperties`` is refused too: jsonschema evaluates that
  combination with ``re`` internally.
"""

from __future__ import annotations

import functools
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Any

import jsonschema
import re2
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.exceptions import NoSuchResource

_REFERENCE_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
_MAX_PATTERN_CACHE = 256


class UnsafeSchema(ValueError):
    """A caller's schema asks for something this host will not do; the message names it."""


def _refuse_retrieval(uri: str) -> Any:
    # referencing declares its classes with its own attrs wrapper, which mypy cannot read.
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


# No resource is ever fetched: a reference that is not inside the document stays unresolvable.
_NO_RETRIEVAL: Registry[Any] = Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]


@functools.lru_cache(maxsize=_MAX_PATTERN_CACHE)
def _compiled(pattern: str) -> Any:
    return re2.compile(pattern)


def _search(pattern: str, text: str) -> bool:
    return _compiled(pattern).search(text) is not None


def _nodes(schema: Any, pointer: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object in the schema document with its JSON pointer (iteratively: no depth limit)."""
    stack: list[tuple[str, Any]] = [(pointer, schema)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, dict):
            yield where, node
            stack.extend((f"{where}/{_escape(str(key))}", value) for key, value in node.items())
        elif isinstance(node, list):
            stack.extend((f"{where}/{index}", value) for index, value in enumerate(node))


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _resolves(schema: Any, pointer: str) -> bool:
    """Whether a ``#/a/b`` pointer names a node of the document (embedded ``$id``s aside)."""
    node = schema
    for raw in pointer[2:].split("/"):
        token = urllib.parse.unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False
    return True


def _check_pattern(pattern: str, where: str) -> None:
    try:
        _compiled(pattern)
    except re2.error as error:
        raise UnsafeSchema(
            f"pattern {pattern!r} at {where} is not supported: patterns run on RE2 (no backreferences "
            f"or lookaround) ({error})"
        ) from None


def check_schema_references(schema: Any) -> None:
    """Refuse what a caller's schema must not make the host do; UnsafeSchema names the keyword.

    * a ``$ref`` (or ``$dynamicRef``/``$recursiveRef``) that does not start with ``#``: only
      references inside the same schema document are resolved;
    * a ``pattern`` or ``patternProperties`` key RE2 cannot compile;
    * ``unevaluatedProperties`` in a schema that also uses ``patternProperties``.
    """
    uses_pattern_properties = False
    uses_unevaluated = None
    for where, node in _nodes(schema):
        for keyword in _REFERENCE_KEYWORDS:
            target = node.get(keyword)
            if isinstance(target, str) and not target.startswith("#"):
                raise UnsafeSchema(
                    f"{keyword} {target!r} at {where} points outside this schema; only references "
                    "inside the same schema ('#...') are allowed"
                )
            if isinstance(target, str) and target.startswith("#/") and not _resolves(schema, target):
                raise UnsafeSchema(f"{keyword} {target!r} at {where} does not resolve in this schema")
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            _check_pattern(pattern, f"{where}/pattern")
        properties = node.get("patternProperties")
        if isinstance(properties, dict):
            uses_pattern_properties = True
            for key in properties:
                _check_pattern(str(key), f"{where}/patternProperties")
        if "unevaluatedProperties" in node and uses_unevaluated is None:
            uses_unevaluated = where
    if uses_pattern_properties and uses_unevaluated is not None:
        raise UnsafeSchema(
            f"unevaluatedProperties at {uses_unevaluated} cannot be combined with patternProperties "
            "in a schema sent to this host"
        )


# --- keywords that match patterns, on RE2 -------------------------------------------------------
# jsonschema calls these with its validator instance; its Validator protocol does not declare
# `descend`, so they take Any.


def _pattern(validator: Any, pattern: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> Iterator[str]:
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    for key in instance:
        if key not in properties and not any(_search(p, key) for p in patterns):
            yield key


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    extras = list(_additional(instance, schema))
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(extra) for extra in sorted(extras))
            patterns = ", ".join(repr(p) for p in sorted(schema["patternProperties"]))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {patterns}")
        else:
            listed = ", ".join(repr(extra) for extra in extras)
            was = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({listed} {was} unexpected)")


_SafeValidator = jsonschema.validators.extend(
    Draft202012Validator,
    validators={
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    },
)


def schema_validator(schema: Mapping[str, Any] | bool) -> Validator:
    """A Draft 2020-12 validator for ``schema`` that reads nothing outside it and matches on RE2."""
    validator: Validator = _SafeValidator(schema, registry=_NO_RETRIEVAL)
    return validator
