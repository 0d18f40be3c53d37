"""Function tools: JSON schema from type hints and docstrings, validated invocation."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import functools
import inspect
import json
import re
import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, overload

import jsonschema
import pydantic
from pydantic import BaseModel, ConfigDict, Field

from ._docstrings import parse_docstring
from ._errors import AgentConfigurationError, ToolExecutionError
from ._schemas import UnsafeSchema, check_schema_references, schema_validator
from ._unicode import without_lone_surrogates

ApprovalRule = bool | Callable[[dict[str, Any]], bool]
"""Whether a call needs a person's approval before it runs: always (True), never (False), or what a
predicate on the call's arguments answers."""

TOOL_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# Attribute that marks a type (ProviderContext) whose parameter is injected, not asked of the model.
CONTEXT_MARKER = "__agents_tool_context__"


@dataclasses.dataclass(frozen=True)
class ToolSource:
    """Where a tool that is not the app's own code runs: the MCP server serving it."""

    server: str
    """The server's name, as the agent declares it (`MCPServer(name=...)`)."""
    address: str | None = None
    port: int | None = None


def _is_context_annotation(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _is_context_annotation(typing.get_args(annotation)[0])
    return isinstance(annotation, type) and bool(getattr(annotation, CONTEXT_MARKER, False))


def _strip_titles(schema: Any) -> Any:
    """Drop pydantic's generated ``title`` keys: noise to the model (property names survive)."""
    if isinstance(schema, list):
        return [_strip_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(value, dict):
            out[key] = {name: _strip_titles(sub) for name, sub in value.items()}
        else:
            out[key] = _strip_titles(value)
    return out


def _args_model(
    func: Callable[..., Any], tool_name: str, param_docs: Mapping[str, str]
) -> tuple[type[BaseModel], str | None]:
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception as exc:  # unresolved forward references and the like
        raise AgentConfigurationError(f"tool {tool_name!r}: cannot resolve type hints: {exc}") from exc
    fields: dict[str, Any] = {}
    context_param: str | None = None
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise AgentConfigurationError(
                f"tool {tool_name!r}: *args/**kwargs cannot be described to a model"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise AgentConfigurationError(f"tool {tool_name!r}: positional-only parameter {param.name!r}")
        if param.name not in hints:
            raise AgentConfigurationError(
                f"tool {tool_name!r}: parameter {param.name!r} needs a type hint (it becomes the JSON schema)"
            )
        annotation = hints[param.name]
        if _is_context_annotation(annotation):
            context_param = param.name
            continue
        default: Any = ... if param.default is param.empty else param.default
        description = param_docs.get(param.name)
        # Only set a description the docstring gives, so one from Annotated[..., Field()] survives.
        info = Field(default, description=description) if description else Field(default)
        fields[param.name] = (annotation, info)
    try:
        model = pydantic.create_model(
            f"{tool_name}_arguments",
            __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
            **fields,
        )
        model.model_json_schema()
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError) as exc:
        raise AgentConfigurationError(f"tool {tool_name!r}: parameters have no JSON schema: {exc}") from exc
    return model, context_param


def to_jsonable(value: Any) -> Any:
    """A tool's return value as a JSON value (pydantic models, dataclasses, dates...), else its str()."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    try:
        return pydantic.TypeAdapter(Any).dump_python(value, mode="json")
    except Exception:
        return str(value)


def _describe_validation_error(exc: pydantic.ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


@dataclasses.dataclass(frozen=True, eq=False)
class FunctionTool:
    """A Python function the model may call: name, description and a JSON schema of its arguments.

    Build one with the ``tool`` decorator, ``FunctionTool.from_function`` or directly with an
    explicit ``parameters`` schema. Calling the object calls the function unchanged.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    func: Callable[..., Any]
    args_model: type[BaseModel] | None = None
    context_param: str | None = None
    bound: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    requires_approval: ApprovalRule = False
    """A call of this tool waits for a person's decision before it runs (docs/agents.md "Tools that
    need approval"): True, or a predicate on the call's arguments."""
    source: ToolSource | None = None
    """The MCP server that runs the tool (None: the app's own function)."""

    def __post_init__(self) -> None:
        if not isinstance(self.requires_approval, bool) and not callable(self.requires_approval):
            raise AgentConfigurationError(
                f"tool {self.name!r}: requires_approval must be a bool or a predicate on the arguments"
            )
        if not isinstance(self.name, str) or not TOOL_NAME_PATTERN.match(self.name):
            raise AgentConfigurationError(
                f"tool name {self.name!r} must be 1-64 characters of letters, digits, '_' or '-'"
            )
        if not callable(self.func):
            raise AgentConfigurationError(f"tool {self.name!r}: func is not callable")
        if self.parameters.get("type") != "object":
            raise AgentConfigurationError(
                f"tool {self.name!r}: parameters must be a JSON schema of type object"
            )
        try:
            jsonschema.Draft202012Validator.check_schema(self.parameters)
            check_schema_references(self.parameters)
        except jsonschema.SchemaError as exc:
            raise AgentConfigurationError(
                f"tool {self.name!r}: invalid parameters schema: {exc.message}"
            ) from exc
        except UnsafeSchema as exc:
            raise AgentConfigurationError(f"tool {self.name!r}: parameters schema: {exc}") from exc

    def needs_approval(self, arguments: Mapping[str, Any]) -> bool:
        """Whether a call with these arguments waits for a decision. A predicate that raises (or
        answers something else than a bool) counts as yes: when in doubt, a person decides."""
        rule = self.requires_approval
        if isinstance(rule, bool):
            return rule
        try:
            answer = rule(dict(arguments))
        except Exception:
            return True
        return answer if isinstance(answer, bool) else True

    @classmethod
    def from_function(
        cls,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        requires_approval: ApprovalRule = False,
    ) -> FunctionTool:
        """Describe ``func``: its name, docstring summary and a schema from its type hints."""
        tool_name: str = name or str(getattr(func, "__name__", ""))
        if not TOOL_NAME_PATTERN.match(tool_name):
            raise AgentConfigurationError(
                f"tool name {tool_name!r} must be 1-64 characters of letters, digits, '_' or '-'"
            )
        doc = parse_docstring(inspect.getdoc(func))
        model, context_param = _args_model(func, tool_name, doc.params)
        schema = _strip_titles(model.model_json_schema())
        schema.setdefault("properties", {})
        return cls(
            name=tool_name,
            description=description if description is not None else doc.summary,
            parameters=schema,
            func=func,
            args_model=model,
            context_param=context_param,
            requires_approval=requires_approval,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **{**self.bound, **kwargs})

    @property
    def is_async(self) -> bool:
        """Whether the function is a coroutine function (run on the loop, not in a thread)."""
        func = self.func.func if isinstance(self.func, functools.partial) else self.func
        if inspect.iscoroutinefunction(func):
            return True
        # An object whose __call__ is async (a callable class instance).
        return not inspect.isroutine(func) and inspect.iscoroutinefunction(type(func).__call__)

    def with_context(self, context: Any) -> FunctionTool:
        """This tool with its context parameter (if it has one) bound to ``context``."""
        if self.context_param is None:
            return self
        # A shallow copy, not dataclasses.replace: the schema was checked once at definition.
        bound = copy.copy(self)
        object.__setattr__(bound, "bound", {**self.bound, self.context_param: context})
        return bound

    def chat_schema(self) -> dict[str, Any]:
        """The tool as a Chat Completions ``tools`` entry."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def responses_schema(self) -> dict[str, Any]:
        """The tool as a Responses API ``tools`` entry."""
        return {
            "type": "function",
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "strict": False,
        }

    def validate_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Check model-supplied arguments against the schema; ToolExecutionError says what is wrong."""
        if self.args_model is not None:
            try:
                validated = self.args_model.model_validate(dict(arguments))
            except pydantic.ValidationError as exc:
                raise ToolExecutionError(
                    f"invalid arguments for tool {self.name!r}: {_describe_validation_error(exc)}"
                ) from exc
            return {name: getattr(validated, name) for name in type(validated).model_fields}
        errors = sorted(
            schema_validator(self.parameters).iter_errors(dict(arguments)),
            key=lambda e: e.path,
        )
        if errors:
            detail = "; ".join(f"{'.'.join(map(str, e.path)) or '(arguments)'}: {e.message}" for e in errors)
            raise ToolExecutionError(f"invalid arguments for tool {self.name!r}: {detail}")
        return dict(arguments)

    async def invoke(self, arguments: Mapping[str, Any]) -> Any:
        """Validate ``arguments`` and run the function (sync functions in a worker thread)."""
        kwargs = self.validate_arguments(arguments)
        kwargs.update(self.bound)
        if self.is_async:
            return await typing.cast(Awaitable[Any], self.func(**kwargs))
        return await asyncio.to_thread(functools.partial(self.func, **kwargs))


@overload
def tool(func: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, requires_approval: ApprovalRule = False
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: ApprovalRule = False,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a (sync or async) function into a ``FunctionTool``: ``@tool`` or ``@tool(name=...)``;
    ``requires_approval`` (True, or a predicate on the call's arguments) makes its calls wait
    for a person's decision in a hosted turn."""
    if func is not None:
        return FunctionTool.from_function(
            func, name=name, description=description, requires_approval=requires_approval
        )

    def decorate(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool.from_function(
            f, name=name, description=description, requires_approval=requires_approval
        )

    return decorate


def parse_arguments(raw: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """Model-sent argument text as an object, or (None, reason) when it is not a JSON object."""
    text = raw if raw is not None else ""
    if not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"arguments are not valid JSON ({exc.msg}: character {exc.pos})"
    except (ValueError, RecursionError) as exc:  # an integer past the digit limit, deep nesting
        return None, f"arguments cannot be read ({exc})"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {type(value).__name__}"
    # \uXXXX escapes inside the argument text can spell lone surrogates.
    return without_lone_surrogates(value, "the model's tool arguments"), None
