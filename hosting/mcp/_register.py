"""Declare the MCP tool trigger functions on the app (Python v2 programming model)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import azure.durable_functions as df
import azure.functions as func

from agents import Agent

from .._settings import ApiSettings, McpSettings
from ..client import BoundClient, Submitter, durable_client_input
from ..lifecycle import sweepers_of
from ..streams import StreamStore
from ._config import McpTools, ToolSpec, chosen_agents, tool_spec
from ._tool import AgentTool

TRIGGER_TYPE = "mcpToolTrigger"
"""The binding type of the Azure Functions MCP extension's tool trigger."""


def _register(
    app: df.DFApp,
    agent: Agent,
    spec: ToolSpec,
    wait_seconds: float,
    submitter: Submitter,
    settings: ApiSettings,
) -> None:
    tool = AgentTool(agent, spec, wait_seconds, submitter, settings)

    async def mcp_tool(context: str, client: BoundClient) -> str:
        return await tool(context, client)

    mcp_tool.__name__ = spec.function_name
    function: Any = durable_client_input(app, mcp_tool)
    # generic_trigger, not the library's mcp_tool_trigger decorator: the same binding JSON, and it
    # works with every azure-functions release the app allows (>= 1.24).
    function = app.generic_trigger(
        arg_name="context",
        type=TRIGGER_TYPE,
        data_type=func.DataType.STRING,
        toolName=spec.tool_name,
        description=spec.description,
        toolProperties=spec.tool_properties(),
        useResultSchema=True,
    )(function)
    app.function_name(spec.function_name)(function)


def register_mcp_tools(
    app: df.DFApp,
    agents: Sequence[Agent],
    mcp_tools: McpTools,
    max_session_bytes: int | None = None,
    settings: ApiSettings | None = None,
    streams: StreamStore | None = None,
    mcp: McpSettings | None = None,
) -> list[ToolSpec]:
    """Add one MCP tool trigger per chosen agent (see `chosen_agents`); returns their specs.
    `max_session_bytes`: the app's session limit (`ApiSettings.max_session_bytes`); `settings`:
    the API's, whose run URLs a call awaiting approval hands out; `streams`: the app's stream
    store, where a call's run is claimed as every run is (a `reject` or `interrupt` run of the
    HTTP API then sees it in flight); `mcp`: the MCP settings `build_app` read (default: the
    environment's, now)."""
    mcp = McpSettings.load() if mcp is None else mcp
    wait_seconds = mcp.wait_seconds
    limit = (settings or ApiSettings()).max_session_bytes if max_session_bytes is None else max_session_bytes
    # Every hosted agent's sweepers, as the HTTP API starts them: the app may be reached only here.
    sweepers = sweepers_of([a.name for a in agents])
    submitter = Submitter(limit, logging.getLogger("hosting.mcp"), sweepers, streams)
    specs = []
    for agent in chosen_agents(agents, mcp_tools, mcp):
        spec = tool_spec(agent)
        _register(app, agent, spec, wait_seconds, submitter, settings or ApiSettings())
        specs.append(spec)
    return specs
