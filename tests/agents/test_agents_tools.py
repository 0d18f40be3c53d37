"""Function tools: schemas derived from type hints and docstrings, argument validation, invocation."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from agents import AgentConfigurationError, FunctionTool, ProviderContext, tool
from agents._docstrings import parse_docstring
from agents._errors import ToolExecutionError
from agents._tools import parse_arguments, to_jsonable


class Address(BaseModel):
    street: str
    city: str


def test_schema_from_hints_defaults_and_google_docstring() -> None:
    @tool
    def book(city: str, nights: int, breakfast: bool = False, budget: float | None = None) -> str:
        """Book a hotel room.

        More details that are still the summary.

        Args:
            city: Where to stay.
            nights: How many nights,
                at least one.
            breakfast: Include breakfast.

        Returns:
            A confirmation.
        """
        return "ok"

    assert book.name == "book"
    assert book.description == "Book a hotel room. More details that are still the summary."
    schema = book.parameters
    assert schema["type"] == "object"
    assert schema["required"] == ["city", "nights"]
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["city"] == {"type": "string", "description": "Where to stay."}
    assert props["nights"] == {"type": "integer", "description": "How many nights, at least one."}
    assert props["breakfast"] == {"type": "boolean", "default": False, "description": "Include breakfast."}
    assert props["budget"]["anyOf"] == [{"type": "number"}, {"type": "null"}]
    assert "title" not in str(schema)


def test_sphinx_and_numpy_docstrings() -> None:
    sphinx = parse_docstring(
        """Summary line.

        :param city: The city.
        :param int days: How many
            days.
        :returns: Nothing.
        """
    )
    assert sphinx.summary == "Summary line."
    assert sphinx.params == {"city": "The city.", "days": "How many days."}
    numpy = parse_docstring(
        """Do things.

        Parameters
        ----------
        city : str
            The city.
        days : int
            Number of
            days.

        Returns
        -------
        str
        """
    )
    assert numpy.summary == "Do things."
    assert numpy.params == {"city": "The city.", "days": "Number of days."}
    assert parse_docstring(None).summary == ""


def test_annotated_literal_and_nested_models() -> None:
    @tool(name="ship", description="Ship a parcel.")
    async def ship_parcel(
        to: Address,
        speed: Literal["standard", "express"] = "standard",
        weight: Annotated[float, Field(gt=0, description="Kilograms.")] = 1.0,
        tags: list[str] | None = None,
    ) -> dict[str, str]:
        return {"city": to.city, "speed": speed}

    assert ship_parcel.name == "ship" and ship_parcel.description == "Ship a parcel."
    props = ship_parcel.parameters["properties"]
    assert props["speed"]["enum"] == ["standard", "express"]
    assert props["weight"]["exclusiveMinimum"] == 0 and props["weight"]["description"] == "Kilograms."
    assert props["to"] == {"$ref": "#/$defs/Address"}
    assert set(ship_parcel.parameters["$defs"]["Address"]["properties"]) == {"street", "city"}
    result = asyncio.run(ship_parcel.invoke({"to": {"street": "1 Main", "city": "Oslo"}, "speed": "express"}))
    assert result == {"city": "Oslo", "speed": "express"}


def test_context_parameter_is_hidden_and_bound() -> None:
    seen: list[object] = []

    @tool
    async def note(text: str, ctx: ProviderContext) -> str:
        """Note something."""
        seen.append(ctx)
        return text.upper()

    assert note.context_param == "ctx"
    assert set(note.parameters["properties"]) == {"text"}
    marker = object()
    assert asyncio.run(note.with_context(marker).invoke({"text": "hi"})) == "HI"
    assert seen == [marker]


def test_invalid_arguments_are_described() -> None:
    @tool
    def add(a: int, b: int = 0) -> int:
        """Add."""
        return a + b

    with pytest.raises(ToolExecutionError, match="a: Field required"):
        add.validate_arguments({"b": 1})
    with pytest.raises(ToolExecutionError, match="Extra inputs are not permitted"):
        add.validate_arguments({"a": 1, "c": 2})
    with pytest.raises(ToolExecutionError, match="valid integer"):
        add.validate_arguments({"a": "many"})
    assert add.validate_arguments({"a": "3"}) == {"a": 3, "b": 0}  # lax coercion, as the schema allows


def test_sync_tools_run_in_a_worker_thread() -> None:
    threads: list[str] = []

    @tool
    def where() -> str:
        """Which thread."""
        threads.append(threading.current_thread().name)
        return "here"

    assert asyncio.run(where.invoke({})) == "here"
    assert threads and threads[0] != threading.main_thread().name
    assert where() == "here"  # the object still calls the function directly


def test_explicit_schema_tool_validates_with_jsonschema() -> None:
    def lookup(**kwargs: object) -> object:
        return kwargs

    t = FunctionTool(
        name="lookup",
        description="Look up.",
        parameters={"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        func=lookup,
    )
    assert asyncio.run(t.invoke({"id": 3})) == {"id": 3}
    with pytest.raises(ToolExecutionError, match="'id' is a required property"):
        t.validate_arguments({})
    assert t.chat_schema()["function"]["name"] == "lookup"
    assert t.responses_schema()["name"] == "lookup"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: tool(lambda x: x), "must be 1-64"),
        (lambda: FunctionTool.from_function(_no_hint), "needs a type hint"),
        (lambda: FunctionTool.from_function(_varargs), r"\*args"),
        (lambda: FunctionTool.from_function(_positional), "positional-only"),
        (lambda: FunctionTool.from_function(_unschemable), "no JSON schema"),
        (
            lambda: FunctionTool(name="x", description="", parameters={"type": "array"}, func=print),
            "type object",
        ),
        (
            lambda: FunctionTool(
                name="x", description="", parameters={"type": "object", "required": 3}, func=print
            ),
            "invalid parameters schema",
        ),
    ],
)
def test_bad_tools_fail_at_definition(make: Callable[[], object], message: str) -> None:
    with pytest.raises(AgentConfigurationError, match=message):
        make()


def _no_hint(x) -> None:  # type: ignore[no-untyped-def]
    """No hint."""


def _varargs(*names: str) -> None:
    """Varargs."""


def _positional(x: int, /) -> None:
    """Positional."""


def _unschemable(lock: threading.Lock) -> None:
    """No schema for a lock."""


def test_parse_arguments() -> None:
    assert parse_arguments('{"a": 1}') == ({"a": 1}, None)
    assert parse_arguments("") == ({}, None)
    assert parse_arguments(None) == ({}, None)
    value, reason = parse_arguments("{not json")
    assert value is None and reason is not None and "not valid JSON" in reason
    value, reason = parse_arguments("[1, 2]")
    assert value is None and reason == "arguments must be a JSON object, got list"


def test_to_jsonable() -> None:
    import dataclasses
    import datetime

    @dataclasses.dataclass
    class Point:
        x: int

    assert to_jsonable(Address(street="s", city="c")) == {"street": "s", "city": "c"}
    assert to_jsonable(Point(1)) == {"x": 1}
    assert to_jsonable(datetime.date(2026, 1, 2)) == "2026-01-02"
    assert to_jsonable({"a": (1, 2)}) == {"a": [1, 2]}
    assert to_jsonable(object()).startswith("<object object")


def test_async_callable_objects_run_on_the_loop() -> None:
    class Lookup:
        async def __call__(self, key: str) -> str:
            return key * 2

    t = FunctionTool(
        name="lookup",
        description="",
        parameters={"type": "object", "properties": {"key": {"type": "string"}}},
        func=Lookup(),
    )
    assert t.is_async
    assert asyncio.run(t.invoke({"key": "ab"})) == "abab"
    assert not tool(_positional_free).is_async


def _positional_free(x: int) -> int:
    """Sync."""
    return x
