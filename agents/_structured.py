"""Structured output: a pydantic model or JSON schema as the format a model must answer in."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import jsonschema
import pydantic
import referencing.exceptions
from pydantic import BaseModel

from ._errors import AgentConfigurationError
from ._schemas import check_schema_references, schema_validator
from ._unicode import without_lone_surrogates

_NAME_OK = re.compile(r"[^A-Za-z0-9_-]")


class StructuredOutputError(Exception):
    """Internal: the model's final answer does not fit the requested format."""


def _subschemas(schema: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for key in ("properties", "$defs", "definitions"):
        if isinstance(schema.get(key), dict):
            out.extend(schema[key].values())
    for key in ("anyOf", "allOf", "oneOf"):
        if isinstance(schema.get(key), list):
            out.extend(schema[key])
    if "items" in schema:
        out.append(schema["items"])
    return out


def _strict_compatible(schema: Any) -> bool:
    """Whether OpenAI's strict mode accepts the schema (closed objects, every property required)."""
    if not isinstance(schema, dict):
        return True
    if schema.get("type") == "object" or "properties" in schema:
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is not False or set(schema.get("required", [])) != set(props):
            return False
    return all(_strict_compatible(sub) for sub in _subschemas(schema))


@dataclass(frozen=True)
class ResponseFormat:
    """A normalised output format: a named JSON schema, or (``schema is None``) any JSON object."""

    name: str
    schema: dict[str, Any] | None
    strict: bool = False
    model: type[BaseModel] | None = None

    @classmethod
    def parse(cls, value: Any) -> ResponseFormat:
        """Accept a pydantic model class, a JSON schema, or an OpenAI ``response_format``/``text.format``.

        Raises ValueError saying what is wrong.
        """
        if isinstance(value, type) and issubclass(value, BaseModel):
            schema = value.model_json_schema()
            return cls(_clean_name(value.__name__), schema, _strict_compatible(schema), value)
        if not isinstance(value, dict):
            raise ValueError("must be a pydantic model class or a JSON schema object")
        if value.get("type") == "json_object" and len(value) == 1:
            return cls("json_object", None)
        if value.get("type") == "json_schema" and isinstance(value.get("json_schema"), dict):
            inner = value["json_schema"]  # Chat Completions shape
            return cls._from_schema(inner.get("schema"), inner.get("name"), inner.get("strict"))
        if value.get("type") == "json_schema" and "schema" in value:  # Responses API shape
            return cls._from_schema(value.get("schema"), value.get("name"), value.get("strict"))
        return cls._from_schema(value, None, None)

    @classmethod
    def _from_schema(cls, schema: Any, name: Any, strict: Any) -> ResponseFormat:
        if not isinstance(schema, dict) or not schema:
            raise ValueError("the JSON schema must be a non-empty object")
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"not a valid JSON schema: {exc.message}") from None
        check_schema_references(schema)  # UnsafeSchema is a ValueError naming the $ref or pattern
        if not any(
            k in schema for k in ("type", "properties", "$ref", "anyOf", "oneOf", "allOf", "enum", "const")
        ):
            raise ValueError("the JSON schema says nothing about the answer (no type or properties)")
        if name is not None and not isinstance(name, str):
            raise ValueError("the schema name must be a string")
        title = schema.get("title")
        resolved = _clean_name(name or (title if isinstance(title, str) else "") or "response")
        is_strict = bool(strict) if strict is not None else _strict_compatible(schema)
        return cls(resolved, schema, is_strict)

    def chat_param(self) -> dict[str, Any]:
        """The Chat Completions ``response_format`` value."""
        if self.schema is None:
            return {"type": "json_object"}
        return {
            "type": "json_schema",
            "json_schema": {"name": self.name, "schema": self.schema, "strict": self.strict},
        }

    def responses_param(self) -> dict[str, Any]:
        """The Responses API ``text.format`` value."""
        if self.schema is None:
            return {"type": "json_object"}
        return {"type": "json_schema", "name": self.name, "schema": self.schema, "strict": self.strict}

    def parse_answer(self, text: str) -> Any:
        """The answer as JSON, validated; StructuredOutputError says why it does not fit."""
        try:
            value = read_json_answer(text)
        except json.JSONDecodeError as exc:
            raise StructuredOutputError(f"the answer is not JSON ({exc.msg}: character {exc.pos})") from None
        except (ValueError, RecursionError) as exc:  # an integer past the digit limit, deep nesting
            raise StructuredOutputError(f"the answer cannot be read as JSON ({exc})") from None
        if self.model is not None:
            try:
                self.model.model_validate(value)
            except pydantic.ValidationError as exc:
                details = "; ".join(
                    f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}"
                    for e in exc.errors(include_url=False)
                )
                raise StructuredOutputError(f"the answer does not fit {self.name}: {details}") from None
        elif self.schema is not None:
            try:
                errors = list(schema_validator(self.schema).iter_errors(value))
            except referencing.exceptions.Unresolvable as exc:
                # Up-front checks resolve '#/...' pointers; an anchor or embedded $id may still miss.
                raise StructuredOutputError(f"the schema's reference {exc.ref!r} does not resolve") from None
            if errors:
                details = "; ".join(
                    f"{'.'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in errors[:5]
                )
                raise StructuredOutputError(f"the answer does not fit the schema: {details}")
        elif not isinstance(value, dict):
            raise StructuredOutputError("the answer is not a JSON object")
        return value


_FENCE = re.compile(r"^\s*```[A-Za-z]*\s*\n(?P<body>.*?)\n?\s*```\s*$", re.DOTALL)


def read_json_answer(text: str) -> Any:
    """A JSON answer's value: fences removed, lone surrogates (from JSON escapes) as U+FFFD.

    The one reader of structured answers: the turn's check and `turn_result` both use it, so the
    value a result carries is the value that was checked. Raises ValueError or RecursionError.
    """
    return without_lone_surrogates(json.loads(unfence(text)), "the model's structured answer")


def unfence(text: str) -> str:
    """The JSON inside a Markdown code fence, which some models wrap around JSON answers."""
    match = _FENCE.match(text)
    return match.group("body") if match else text


def _clean_name(name: str) -> str:
    return _NAME_OK.sub("_", name)[:64] or "response"


def agent_response_format(value: Any) -> ResponseFormat | None:
    """An agent's configured format, or AgentConfigurationError."""
    if value is None:
        return None
    try:
        return ResponseFormat.parse(value)
    except ValueError as exc:
        raise AgentConfigurationError(f"response_format {exc}") from None
