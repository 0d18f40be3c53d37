"""Agent definitions: a few lines to define, misconfiguration refused at definition time."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from agents import (
    Agent,
    AgentConfigurationError,
    ContextProvider,
    FunctionTool,
    HistoryReducer,
    MemoryProvider,
    ModelSettings,
    ProviderContext,
    tool,
)
from agents._structured import ResponseFormat, StructuredOutputError


@tool
def remember(fact: str) -> str:
    """Clashes with the memory provider's tool."""
    return fact


def plain_function(city: str) -> str:
    """A function that is not decorated."""
    return city


class Verdict(BaseModel):
    approved: bool
    feedback: str


def test_minimal_agent_and_normalisation() -> None:
    agent = Agent(name="helper", instructions="Be nice.", tools=[plain_function])
    [only] = agent.tools
    assert isinstance(only, FunctionTool) and only.name == "plain_function"  # plain functions become tools
    assert agent.format is None and agent.history_mode == "local"
    described = agent.describe()
    assert described["tools"] == [
        {"name": "plain_function", "description": "A function that is not decorated."}
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "bad name"}, "agent name"),
        ({"name": ""}, "agent name"),
        ({"history_mode": "cloud"}, "unknown history mode"),
        ({"history_mode": "service"}, "needs the Responses API"),
        ({"tools": [remember], "context_providers": [MemoryProvider()]}, "tool name 'remember'"),
        ({"tools": [plain_function, plain_function]}, "tool name 'plain_function'"),
        ({"context_providers": [MemoryProvider(), MemoryProvider()]}, "share source_id 'memory'"),
        ({"context_providers": [object()]}, "no before_model"),
        ({"response_format": {"type": "object", "properties": 5}}, "response_format"),
        ({"response_format": {"description": "nothing"}}, "says nothing"),
        ({"response_format": "json"}, "response_format"),
        ({"max_tool_rounds": 0}, "max_tool_rounds"),
        ({"tool_timeout": -1}, "tool_timeout"),
        ({"tools": [42]}, "not a function"),
        ({"instructions": None}, "instructions"),
        (
            {
                "history_mode": "service",
                "model": ModelSettings(wire_api="responses"),
                "context_providers": [HistoryReducer()],
            },
            "needs local history",
        ),
    ],
)
def test_misconfiguration_fails_at_definition(kwargs: dict[str, Any], message: str) -> None:
    kwargs.setdefault("name", "agent")
    with pytest.raises(AgentConfigurationError, match=message):
        Agent(**kwargs)


def test_service_mode_with_responses_api_is_fine() -> None:
    agent = Agent(name="svc", history_mode="service", model=ModelSettings(wire_api="responses"))
    assert agent.history_mode == "service"


def test_validate_checks_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = Agent(name="a", history_mode="service", model=ModelSettings(wire_api="responses"))
    with pytest.raises(AgentConfigurationError, match="OPENAI_CHAT_MODEL_ID"):
        agent.validate()
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://x.openai.azure.com")
    monkeypatch.setenv("AZURE_OPENAI_CHAT_DEPLOYMENT_NAME", "dep")
    monkeypatch.setenv("AZURE_OPENAI_API_VERSION", "2024-10-21")
    with pytest.raises(AgentConfigurationError, match="no Responses API"):
        agent.validate()
    monkeypatch.setenv("AZURE_OPENAI_API_VERSION", "2025-04-01-preview")
    agent.validate()
    Agent(name="chat").validate()  # chat works on any Azure version


def test_custom_provider_source_id_is_checked() -> None:
    class NoId(ContextProvider):
        pass

    with pytest.raises(AgentConfigurationError, match="source_id"):
        NoId()

    class Named(ContextProvider):
        source_id = "named"

        async def before_model(self, context: ProviderContext) -> None:
            return None

    assert Agent(name="a", context_providers=[Named()]).describe()["contextProviders"] == ["named"]


def test_response_format_shapes() -> None:
    from_model = ResponseFormat.parse(Verdict)
    assert from_model.name == "Verdict" and from_model.model is Verdict
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    raw = ResponseFormat.parse(schema)
    assert (raw.name, raw.schema, raw.strict) == ("response", schema, False)
    chat = ResponseFormat.parse(
        {"type": "json_schema", "json_schema": {"name": "N", "schema": schema, "strict": True}}
    )
    assert (chat.name, chat.strict) == ("N", True)
    responses = ResponseFormat.parse({"type": "json_schema", "name": "my name!", "schema": schema})
    assert responses.name == "my_name_"
    assert ResponseFormat.parse({"type": "json_object"}).schema is None
    strict = {**schema, "additionalProperties": False}
    assert ResponseFormat.parse(strict).strict is True
    assert raw.chat_param() == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": schema, "strict": False},
    }
    assert raw.responses_param() == {
        "type": "json_schema",
        "name": "response",
        "schema": schema,
        "strict": False,
    }


def test_structured_answer_validation() -> None:
    fmt = ResponseFormat.parse(Verdict)
    assert fmt.parse_answer('{"approved": true, "feedback": "ok"}') == {"approved": True, "feedback": "ok"}
    with pytest.raises(StructuredOutputError, match="not JSON"):
        fmt.parse_answer("Sure! Here it is")
    with pytest.raises(StructuredOutputError, match="approved"):
        fmt.parse_answer('{"feedback": "ok"}')
    schema_fmt = ResponseFormat.parse(
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    )
    with pytest.raises(StructuredOutputError, match="'n' is a required property"):
        schema_fmt.parse_answer("{}")
    with pytest.raises(StructuredOutputError, match="not a JSON object"):
        ResponseFormat.parse({"type": "json_object"}).parse_answer("[1]")


def test_agent_tools_cannot_take_a_provider_context() -> None:
    @tool
    async def sneaky(x: int, ctx: ProviderContext) -> int:
        """Wants a context."""
        return x

    with pytest.raises(AgentConfigurationError, match="only a context provider's tools"):
        Agent(name="a", tools=[sneaky])


def test_fenced_json_answers_are_accepted() -> None:
    fmt = ResponseFormat.parse(Verdict)
    fenced = '```json\n{"approved": false, "feedback": "more"}\n```'
    assert fmt.parse_answer(fenced) == {"approved": False, "feedback": "more"}
    with pytest.raises(StructuredOutputError):
        fmt.parse_answer("```json\nnot json\n```")
