"""`build_app`: the hosted agents onto the Functions Python v2 programming model (`df.DFApp`)."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from typing import Any

import azure.durable_functions as df
import azure.functions as func

from agents import Agent, AgentConfigurationError, preload_model_sdk
from agents.memory import MemorySettings, use_memory_settings

from ._extensions import Extension
from ._handlers import Handler
from ._hub import memory_table
from ._ids import entity_name
from ._lazy import LazyEdge
from ._settings import ApiSettings, HostingSettings, use_settings
from ._telemetry import configure_telemetry, traced_http
from .a2a import A2A_FORMAT, A2A_ROUTES, a2a_api
from .agui import AGUI_ROUTES, agui_api
from .client import BoundClient, durable_client_input
from .console import CONSOLE_ROUTES, Console
from .entity import AgentEntity, TimeLimits, guarded_batch
from .http import (
    AGENT_ROUTES,
    USER_ROUTES,
    Answers,
    Api,
    Request,
    Response,
    RouteSpec,
    RunStreams,
    SessionsApi,
    UserErasure,
    UserExport,
    UserMemories,
    check_init_indexing,
    guarded,
    history,
    json_response,
    openapi_document,
    serve,
)
from .lifecycle import register_lifecycle
from .mcp import McpTools, register_mcp_tools
from .responses import RESPONSES_ROUTES, responses_api
from .streams import StreamStore, stream_store
from .webhooks import RUN_FORMAT, register_format, register_webhooks

# Agent names become entity/function names ("dafx-<name>") and URL path segments.
_AGENT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,59}")

log = logging.getLogger("hosting")


def _check_agents(agents: Sequence[Agent]) -> None:
    if not agents:
        raise AgentConfigurationError("build_app needs at least one agent")
    seen: set[str] = set()
    for agent in agents:
        name = agent.name
        if _AGENT_NAME.fullmatch(name) is None:
            raise AgentConfigurationError(
                f"agent name {name!r} cannot be hosted: use a letter, then letters, digits, '_' or '-' "
                "(at most 60 characters); it becomes the entity name and a URL segment"
            )
        if name.lower() in seen:
            # Entity names are case-insensitive in the Durable extension.
            raise AgentConfigurationError(f"two agents are named {name!r} (names are case-insensitive)")
        seen.add(name.lower())
        agent.validate()
        log.info("agent %r: %s", name, agent.model_in_use())


def _read_settings() -> HostingSettings:
    """The app's settings, read once, now: a bad one stops the app at startup, naming it, instead
    of failing requests (`HostingConfigurationError`, `AgentConfigurationError`). They are the
    app's from here on (`hosting._settings.current`, for what reads one per request without a
    caller to hand it down). Memory gets the app's table, named after its task hub as the
    archive's container is."""
    settings = HostingSettings.load()
    use_settings(settings)
    use_memory_settings(MemorySettings.from_env(default_table=memory_table(settings.task_hub)))
    return settings


def _check_extensions(agents: Sequence[Agent], extensions: Sequence[Extension]) -> None:
    hosted = {a.name for a in agents}
    functions = {
        spec.function for spec in (*AGENT_ROUTES, *USER_ROUTES, *RESPONSES_ROUTES, *A2A_ROUTES, *AGUI_ROUTES)
    }
    functions |= {entity_name(a.name) for a in agents}
    for extension in extensions:
        missing = sorted(set(extension.requires_agents) - hosted)
        if missing:
            raise AgentConfigurationError(
                f"the {extension.name} extension needs the agents {', '.join(missing)}"
            )
        for name in [spec.function for spec in extension.routes] + list(extension.orchestrators):
            if name in functions:
                raise AgentConfigurationError(
                    f"the {extension.name} extension adds a second function {name!r}"
                )
            functions.add(name)


def _register_orchestrator(app: df.DFApp, name: str, orchestrator: Any) -> None:
    def orchestrator_function(context: df.DurableOrchestrationContext) -> Any:
        return orchestrator(context)

    orchestrator_function.__name__ = name
    decorated = app.orchestration_trigger(context_name="context", orchestration=name)(orchestrator_function)
    app.function_name(name)(decorated)


def _register_http(
    app: df.DFApp, spec: RouteSpec, handler: Handler, route_prefix: str, max_body_bytes: int
) -> None:
    auth = func.AuthLevel.ANONYMOUS if spec.anonymous else func.AuthLevel.FUNCTION
    route = f"/{route_prefix}/{spec.route}" if route_prefix else f"/{spec.route}"
    wrapped = traced_http(route, guarded(handler))
    function: Any
    # The Functions HTTP streaming types (hosting/http/_edge.py): what streams in Azure streams locally.
    # `context` (the invocation's, with the host's W3C trace context) is passed by the worker to
    # functions that declare it. The worker refuses to load a function whose `context` annotation
    # is anything but azure.functions.Context (not even Optional), hence no default here.
    if spec.needs_client:

        async def with_client(req: Request, client: BoundClient, context: func.Context) -> Any:
            return await serve(wrapped, req, client, max_body_bytes, context)

        with_client.__name__ = spec.function
        # Real types, not this module's postponed strings: the worker (and the local host) pick the
        # streaming protocol from the request parameter's type.
        with_client.__annotations__ = {
            "req": Request,
            "client": BoundClient,
            "context": func.Context,
            "return": Response,
        }
        function = durable_client_input(app, with_client)
    else:

        async def without_client(req: Request, context: func.Context) -> Any:
            return await serve(wrapped, req, None, max_body_bytes, context)

        without_client.__name__ = spec.function
        without_client.__annotations__ = {"req": Request, "context": func.Context, "return": Response}
        function = without_client
    function = app.route(route=spec.route, methods=spec.methods, auth_level=auth)(function)
    app.function_name(spec.function)(function)


def _register_entity(
    app: df.DFApp, agent: Agent, settings: ApiSettings, streams: StreamStore, limits: TimeLimits
) -> None:
    entity = AgentEntity(agent, settings.max_session_bytes, streams=streams, limits=limits)

    def entity_function(context: df.DurableEntityContext) -> None:
        entity(context)

    entity_function.__name__ = "entity_" + agent.name.replace("-", "_")
    # What `app.entity_trigger` declares (the same entityTrigger binding), with the SDK's batch
    # handler guarded: a batch the SDK itself fails still answers its runs (hosting.entity._batch).
    handle = guarded_batch(entity, df.Entity.create(entity_function))
    decorated = app.generic_trigger(arg_name="context", type="entityTrigger", entity_name=entity.name)(handle)
    app.function_name(entity.name)(decorated)


def build_app(
    agents: Sequence[Agent],
    *,
    settings: ApiSettings | None = None,
    extensions: Sequence[Extension] = (),
    console: bool = True,
    mcp_tools: McpTools = None,
) -> df.DFApp:
    """The function app hosting `agents`: one entity `dafx-{name}` per agent keyed by session id,
    the HTTP API under `/api`, and the functions of each of `extensions` (nothing else: an example
    such as the review workflow is registered only when passed here).

    `console` serves the web console at `/api/console/` (anonymous static files; the page calls the
    API with the caller's key; not part of the API document).

    `mcp_tools` exposes agents as MCP tools (True: all, or agent names); the app setting
    `DURABLE_AGENTS_MCP_TOOLS` overrides it (docs/mcp.md).

    Raises `AgentConfigurationError` for an agent that cannot be hosted or an extension whose
    agents are missing or whose function names clash, and `HostingConfigurationError` when the
    app setting `PYTHON_ENABLE_INIT_INDEXING` is not 1 (every HTTP function is declared with the
    HTTP streams types, which need it); at startup, not on the first request.
    """
    agents = list(agents)
    _check_agents(agents)
    _check_extensions(agents, extensions)
    app_settings = _read_settings()
    check_init_indexing(app_settings.http.init_indexing)
    configure_telemetry()
    settings = settings or app_settings.api()
    app = df.DFApp(http_auth_level=func.AuthLevel.FUNCTION)
    store = stream_store(app_settings)
    answers = Answers(settings)
    heartbeat = app_settings.streams.heartbeat_seconds
    api = Api(agents, settings, answers, RunStreams(answers, {a.name: a for a in agents}, store, heartbeat))
    specs = [*AGENT_ROUTES, *USER_ROUTES, *RESPONSES_ROUTES, *A2A_ROUTES, *AGUI_ROUTES]
    specs += [spec for extension in extensions for spec in extension.routes]
    document = json.dumps(
        openapi_document(specs, route_prefix=settings.route_prefix, agent_names=[a.name for a in agents])
    )

    async def openapi(req: func.HttpRequest, client: Any) -> func.HttpResponse:
        return json_response(json.loads(document))

    memories = UserMemories(settings)
    export = UserExport(api.agents, memories).export
    erasure = UserErasure(list(api.agents), settings)
    # The protocol edges load their SDKs on their first request (hosting._lazy says why).
    responses = LazyEdge(lambda: responses_api(api))
    a2a = LazyEdge(lambda: a2a_api(api))
    ag_ui = LazyEdge(lambda: agui_api(api))
    handlers: dict[str, Handler] = {
        "agent_run": api.run,
        "agent_run_status": api.run_status,
        "agent_run_cancel": api.run_cancel,
        "agent_run_approval": api.run_approval,
        "agent_run_stream": api.streams.get,
        "agent_session": api.session,
        "agent_session_reset": api.session_reset,
        "agent_sessions": SessionsApi(api.agents, settings).list,
        "agent_session_history": lambda req, client: history(api.agents, req, client),
        "agents_list": api.list_agents,
        "health": api.health,
        "openapi": openapi,
        **{f"{who}_memories": memories.list for who in ("user", "my")},
        **{f"{who}_memory": memories.delete for who in ("user", "my")},
        **{f"{who}_export": export for who in ("user", "my")},
        **{f"{who}_erase": erasure.erase for who in ("user", "my")},
        **{f"{who}_erasure": erasure.status for who in ("user", "my")},
        "responses_create": responses.handler(lambda edge: edge.create),
        "responses_get": responses.handler(lambda edge: edge.retrieve),
        "responses_cancel": responses.handler(lambda edge: edge.cancel),
        "responses_input_items": responses.handler(lambda edge: edge.input_items),
        "a2a_card": a2a.handler(lambda edge: edge.card),
        "a2a_rpc": a2a.handler(lambda edge: edge.rpc),
        "agent_ag_ui": ag_ui.handler(lambda edge: edge.run),
    }
    for extension in extensions:
        handlers.update(extension.handlers(settings))
        for name, orchestrator in extension.orchestrators.items():
            _register_orchestrator(app, name, orchestrator)
    for spec in specs:
        handler = handlers.get(spec.function)
        if handler is None:
            raise AgentConfigurationError(f"no handler for the route function {spec.function!r}")
        _register_http(app, spec, handler, settings.route_prefix, settings.max_body_bytes)
    if console:
        # Not part of the API document: the page and its assets (docs/console.md).
        page = Console()
        for spec in CONSOLE_ROUTES:
            _register_http(app, spec, page.serve, settings.route_prefix, settings.max_body_bytes)
    limits = TimeLimits.from_settings(app_settings.limits)  # a bad functionTimeout stops the app here
    for agent in agents:
        _register_entity(app, agent, settings, store, limits)
    register_lifecycle(app, store, agents)
    register_webhooks(app, app_settings.webhooks)
    register_format(RUN_FORMAT, api.render_run)  # the run resource, as GET .../runs/{id} answers
    # Every worker process builds the app and a delivery may run in any of them, also one (or, in
    # Azure, an instance) that never served an A2A request: the format is there from the start
    # and loads the A2A edge on the first push it renders.
    register_format(A2A_FORMAT, lambda client, run: a2a.edge().render_push(client, run))
    register_mcp_tools(app, agents, mcp_tools, settings.max_session_bytes, settings, store, app_settings.mcp)
    # The model SDK loads on a thread from here on: the worker answers the host's indexing
    # without waiting for it (agents.preload_model_sdk).
    preload_model_sdk()
    return app
