"""The app's functions as the worker reports them, indexed for dispatch; app objects for tests."""

from __future__ import annotations

import importlib
import json
import types
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .._errors import AppLoadError
from ..worker import RpcFunctionMetadata
from ._routes import RouteTemplate, compile_route, sort_key


@dataclass
class HttpFunction:
    """One HTTP-triggered function."""

    name: str
    function_id: str
    route: RouteTemplate
    methods: frozenset[str] | None  # None: every method
    auth_level: str  # anonymous | function | admin
    request_param: str
    client_params: dict[str, dict[str, Any]]  # param -> durableClient binding


@dataclass
class NamedFunction:
    """An entity, orchestrator or activity function."""

    name: str  # the name clients use (binding's entity/orchestration/activity name or function name)
    function_name: str
    function_id: str
    param: str
    # param -> durableClient binding (activities may carry one, as any Functions function may)
    client_params: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class McpToolFunction:
    """One MCP tool trigger function (the Azure Functions MCP extension's ``mcpToolTrigger``)."""

    name: str
    function_id: str
    tool_name: str
    description: str
    tool_properties: str | None  # the binding's JSON list of properties
    use_result_schema: bool
    trigger_param: str
    client_params: dict[str, dict[str, Any]]


@dataclass
class AppModel:
    """What the app registers (as the worker's functions metadata reports it), indexed for dispatch."""

    http: list[HttpFunction] = field(default_factory=list)
    entities: dict[str, NamedFunction] = field(default_factory=dict)  # key: lower-case name
    orchestrators: dict[str, NamedFunction] = field(default_factory=dict)
    activities: dict[str, NamedFunction] = field(default_factory=dict)
    mcp_tools: list[McpToolFunction] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)  # what the local host cannot provide


_SERVED_BINDINGS = frozenset(
    {"httpTrigger", "http", "durableClient", "entityTrigger", "orchestrationTrigger", "activityTrigger",
     "mcpToolTrigger"}
)


def load_app(target: Any) -> Any:
    """Return the FunctionApp for a module name, a module or an app object."""
    module: Any = target
    if isinstance(target, str):
        module_name, _, attr = target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            raise AppLoadError(f"cannot import app module {module_name!r}: {exc!r}") from exc
        if attr:
            module = getattr(module, attr, None)
    if isinstance(module, types.ModuleType):
        candidates = [v for v in vars(module).values() if hasattr(v, "get_functions")]
        if not candidates:
            raise AppLoadError(f"module {module.__name__!r} defines no FunctionApp")
        named = getattr(module, "app", None)
        module = named if named in candidates else candidates[0]
    if not hasattr(module, "get_functions"):
        raise AppLoadError(f"{target!r} is not an azure.functions FunctionApp")
    return module


def index_metadata(functions: Iterable[RpcFunctionMetadata]) -> AppModel:
    """Index the functions the worker reported (its ``FunctionMetadataResponse``) by trigger type."""
    model = AppModel()
    for function in functions:
        name = function.name
        bindings = [json.loads(raw) for raw in function.raw_bindings]
        trigger = next((b for b in bindings if str(b.get("type", "")).endswith("Trigger")), None)
        if trigger is None:
            model.unsupported.append(f"{name}: no trigger binding")
            continue
        kind = trigger["type"]
        param = trigger["name"]
        clients = {b["name"]: b for b in bindings if b.get("type") == "durableClient"}
        extra = sorted({str(b.get("type")) for b in bindings} - _SERVED_BINDINGS)
        if extra:
            model.unsupported.append(f"{name}: bindings {', '.join(extra)} are not provided")
        fid = function.function_id
        if kind == "httpTrigger":
            methods = trigger.get("methods")
            model.http.append(
                HttpFunction(
                    name=name,
                    function_id=fid,
                    route=compile_route(trigger.get("route") or name),
                    methods=frozenset(m.upper() for m in methods) if methods else None,
                    auth_level=str(trigger.get("authLevel", "function")).lower(),
                    request_param=param,
                    client_params=clients,
                )
            )
        elif kind == "entityTrigger":
            ent_name = trigger.get("entityName") or name
            model.entities[ent_name.lower()] = NamedFunction(ent_name, name, fid, param)
        elif kind == "orchestrationTrigger":
            orch_name = trigger.get("orchestration") or name
            model.orchestrators[orch_name] = NamedFunction(orch_name, name, fid, param)
        elif kind == "activityTrigger":
            act_name = trigger.get("activity") or name
            model.activities[act_name] = NamedFunction(act_name, name, fid, param, clients)
        elif kind == "mcpToolTrigger":
            model.mcp_tools.append(
                McpToolFunction(
                    name=name,
                    function_id=fid,
                    tool_name=str(trigger.get("toolName") or name),
                    description=str(trigger.get("description") or ""),
                    tool_properties=trigger.get("toolProperties"),
                    use_result_schema=bool(trigger.get("useResultSchema")),
                    trigger_param=param,
                    client_params=clients,
                )
            )
        else:
            model.unsupported.append(f"{name}: {kind} functions are not run by the local host")
    model.http.sort(key=lambda f: sort_key(f.route))
    return model

