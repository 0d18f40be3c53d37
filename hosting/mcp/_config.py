"""Which hosted agents are MCP tools, and what each tool declares to the MCP extension."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from agents import Agent, AgentConfigurationError

from .._settings import (
    DEFAULT_MCP_WAIT_SECONDS,
    FRONT_END_LIMIT_SECONDS,
    MAX_MCP_WAIT_SECONDS,
    MCP_TOOLS_ENV,
    MCP_WAIT_ENV,
    MIN_MCP_WAIT_SECONDS,
    McpSettings,
)

__all__ = ["FRONT_END_LIMIT_SECONDS", "MCP_TOOLS_ENV", "MCP_WAIT_ENV"]

MIN_WAIT_SECONDS = MIN_MCP_WAIT_SECONDS
MAX_WAIT_SECONDS = MAX_MCP_WAIT_SECONDS
DEFAULT_WAIT_SECONDS = DEFAULT_MCP_WAIT_SECONDS

FUNCTION_PREFIX = "mcptool_"
"""Function names of the tool triggers: `mcptool_{agent}` (`-` in agent names becomes `_`)."""

QUERY = "query"
SESSION_ID = "session_id"
USER_ID = "user_id"

McpTools = bool | Collection[str] | None
"""`build_app`'s `mcp_tools`: True (every agent), False/None (none) or agent names."""


@dataclass(frozen=True)
class ToolSpec:
    """One agent's MCP tool: the names and texts the tool trigger binding declares."""

    agent: str
    tool_name: str
    function_name: str
    description: str
    structured: bool

    def tool_properties(self) -> str:
        """The binding's `toolProperties` JSON: the extension builds the tool's input schema from it."""
        return json.dumps(
            [
                {
                    "propertyName": QUERY,
                    "propertyType": "string",
                    "description": f"What to ask or tell the {self.agent} agent.",
                    "isRequired": True,
                    "isArray": False,
                },
                {
                    "propertyName": SESSION_ID,
                    "propertyType": "string",
                    "description": (
                        "The conversation to continue: the session_id a previous call returned. "
                        "Leave it out to start a new conversation."
                    ),
                    "isRequired": False,
                    "isArray": False,
                },
                {
                    "propertyName": USER_ID,
                    "propertyType": "string",
                    "description": (
                        "The user this call acts for, when the caller serves several: a conversation "
                        "belongs to the user who started it. Leave it out otherwise."
                    ),
                    "isRequired": False,
                    "isArray": False,
                },
            ]
        )


def _parse_setting(raw: str) -> McpTools:
    value = raw.strip()
    lowered = value.lower()
    if lowered in ("all", "true", "1", "yes", "*"):
        return True
    if lowered in ("", "none", "false", "0", "no"):
        return False
    return [name.strip() for name in value.split(",") if name.strip()]


def chosen_agents(
    agents: Sequence[Agent], mcp_tools: McpTools, settings: McpSettings | None = None
) -> list[Agent]:
    """The agents to expose: the app setting when present (`settings`, default the environment's
    now), else `mcp_tools`.

    Raises `AgentConfigurationError` for a name that is not a hosted agent (a typo must not
    silently hide a tool).
    """
    raw = McpSettings.read_one("tools") if settings is None else settings.tools
    choice = _parse_setting(raw) if raw is not None else mcp_tools
    if choice is None or choice is False:
        return []
    if choice is True:
        return list(agents)
    if isinstance(choice, str):
        choice = [choice]
    by_name = {a.name.lower(): a for a in agents}
    unknown = sorted(n for n in choice if n.lower() not in by_name)
    if unknown:
        source = MCP_TOOLS_ENV if raw is not None else "mcp_tools"
        raise AgentConfigurationError(
            f"{source} names agents that are not hosted: {', '.join(unknown)} "
            f"(hosted: {', '.join(sorted(a.name for a in agents))})"
        )
    wanted = {n.lower() for n in choice}
    return [a for a in agents if a.name.lower() in wanted]


def tool_spec(agent: Agent) -> ToolSpec:
    """The MCP tool of `agent`: named after the agent, described by its description."""
    description = agent.description.strip() or f"The {agent.name} agent."
    description += (
        " Send a query; the answer comes back with a session_id. Pass that session_id on the "
        "next call to continue the same conversation."
    )
    return ToolSpec(
        agent=agent.name,
        tool_name=agent.name,
        function_name=FUNCTION_PREFIX + agent.name.replace("-", "_"),
        description=description,
        structured=agent.format is not None,
    )


def wait_seconds_from_env() -> float:
    """`DURABLE_AGENTS_MCP_WAIT_SECONDS` when set, else the default (200 s), read from the
    environment now (`build_app` reads it once: `McpSettings.wait_seconds`).

    Raises `HostingConfigurationError` for a value outside 0.1 s to 220 s; one past 220 s names
    the front end's limit it would run into.
    """
    return float(McpSettings.read_one("wait_seconds"))
