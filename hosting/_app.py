"""`build_app`: the hosted agents onto the Functions Python v2 programming model (`df.DFApp`)."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import azure.durable_functions as df
import azure.functions as func

from agents import Agent, AgentConfigurationError

from ._entity import AgentEntity
from ._http import Api, ApiSettings, guarded
from ._openapi import openapi_document
from ._problems import json_response
from ._routes import AGENT_ROUTES, WORKFLOW_ROUTES, RouteSpec
from ._sessions import SessionsApi
from ._workflow import WORKFLOW_NAME, ReviewWorkflow, make_orchestrator
from ._workflow_api import WorkflowApi
from .console import CONSOLE_ROUTES, Console

# Agent names become entity/function names ("dafx-<name>") and URL path segments.
_AGENT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,59}")

Handler = Callable[[func.HttpRequest, Any], Awaitable[func.HttpResponse]]


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


def _workflow_for(
    agents: Sequence[Agent], review_workflow: ReviewWorkflow | bool | None
) -> ReviewWorkflow | None:
    names = {a.name for a in agents}
    if review_workflow is False:
        return None
    if review_workflow is None:
        default = ReviewWorkflow()
        return default if {default.writer, default.reviewer} <= names else None
    workflow = ReviewWorkflow() if review_workflow is True else review_workflow
    missing = sorted({workflow.writer, workflow.reviewer} - names)
    if missing:
        raise AgentConfigurationError(f"the review workflow needs the agents {', '.join(missing)}")
    return workflow


def _register_http(app: df.DFApp, spec: RouteSpec, handler: Handler) -> None:
    auth = func.AuthLevel.ANONYMOUS if spec.anonymous else func.AuthLevel.FUNCTION
    wrapped = guarded(handler)
    function: Any
    if spec.needs_client:

        async def with_client(
            req: func.HttpRequest, client: df.DurableOrchestrationClient
        ) -> func.HttpResponse:
            return await wrapped(req, client)

        with_client.__name__ = spec.function
        function = app.durable_client_input(client_name="client")(with_client)
    else:

        async def without_client(req: func.HttpRequest) -> func.HttpResponse:
            return await wrapped(req, None)

        without_client.__name__ = spec.function
        function = without_client
    function = app.route(route=spec.route, methods=spec.methods, auth_level=auth)(function)
    app.function_name(spec.function)(function)


def _register_entity(app: df.DFApp, agent: Agent, settings: ApiSettings) -> None:
    entity = AgentEntity(agent, settings.max_session_bytes)

    def entity_function(context: df.DurableEntityContext) -> None:
        entity(context)

    entity_function.__name__ = "entity_" + agent.name.replace("-", "_")
    decorated = app.entity_trigger(context_name="context", entity_name=entity.name)(entity_function)
    app.function_name(entity.name)(decorated)


def build_app(
    agents: Sequence[Agent],
    *,
    settings: ApiSettings | None = None,
    review_workflow: ReviewWorkflow | bool | None = None,
    console: bool = True,
) -> df.DFApp:
    """The function app hosting `agents`: one entity `dafx-{name}` per agent keyed by session id,
    the HTTP API under `/api`, and (when a writer and a reviewer are hosted) the review workflow.

    `console` serves the web console at `/api/console/` (anonymous static files; the page calls the
    API with the caller's key).

    Raises `AgentConfigurationError` for an agent that cannot be hosted (at startup, not on the
    first request).
    """
    agents = list(agents)
    _check_agents(agents)
    settings = settings or ApiSettings()
    workflow = _workflow_for(agents, review_workflow)
    app = df.DFApp(http_auth_level=func.AuthLevel.FUNCTION)
    api = Api(agents, settings)
    specs = list(AGENT_ROUTES) + (list(WORKFLOW_ROUTES) if workflow else [])
    document = json.dumps(
        openapi_document(specs, route_prefix=settings.route_prefix, agent_names=[a.name for a in agents])
    )

    async def openapi(req: func.HttpRequest, client: Any) -> func.HttpResponse:
        return json_response(json.loads(document))

    handlers: dict[str, Handler] = {
        "agent_run": api.run,
        "agent_run_status": api.run_status,
        "agent_session": api.session,
        "agent_session_reset": api.session_reset,
        "agent_sessions": SessionsApi(api).list,
        "agents_list": api.list_agents,
        "health": api.health,
        "openapi": openapi,
    }
    if workflow is not None:
        flows = WorkflowApi(settings)
        handlers.update(
            workflow_review_start=flows.start_or_list,
            workflow_review_status=flows.status,
            workflow_review_approval=flows.approve,
        )
        orchestrator = make_orchestrator(workflow)
        orchestrator.__name__ = WORKFLOW_NAME
        decorated = app.orchestration_trigger(context_name="context", orchestration=WORKFLOW_NAME)(
            orchestrator
        )
        app.function_name(WORKFLOW_NAME)(decorated)
    for spec in specs:
        _register_http(app, spec, handlers[spec.function])
    if console:
        # Not part of the API document: the page and its assets (docs/console.md).
        page = Console()
        for spec in CONSOLE_ROUTES:
            _register_http(app, spec, page.serve)
    for agent in agents:
        _register_entity(app, agent, settings)
    return app
