"""Which hosted agents are MCP tools, and what each tool declares to the MCP extension."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from agents import Agent, AgentConfigurationError

from .._errors import HostingConfigurationError
from .._numbers import number_setting

MCP_TOOLS_ENV = "DURABLE_AGENTS_MCP_TOOLS"
"""App setting choosing the agents exposed as MCP tools: `all`, `none`, or agent names
separated by commas. When set it overrides `build_app(..., mcp_tools=...)`."""

MCP_WAIT_ENV = "DURABLE_AGENTS_MCP_WAIT_SECONDS"
"""App setting: how long an MCP tool call waits for its turn (default 200 s, at most 220 s)."""

FRONT_END_LIMIT_SECONDS = 230.0
"""How long Azure's front end (its load balancer) keeps an unanswered HTTP request open, whatever
the app's functionTimeout: a tool call is an HTTP request to the MCP extension's webhook."""
DEFAULT_WAIT_SECONDS = 200.0
# The wait is only part of the call: the session read, the signal and the answer come on top, and
# a cold instance adds its start. 30 s of margin keeps the answer (a turn still running is
# answered as such, with its session and run ids) inside the front end's 230 s.
MIN_WAIT_SECONDS = 0.1
MAX_WAIT_SECONDS = 220.0
"""The longest wait that still leaves 10 s before the front end gives up on the request: a longer
one would end in the front end's 504 with no session or run id, so it does not start."""

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


def chosen_agents(agents: Sequence[Agent], mcp_tools: McpTools) -> list[Agent]:
    """The agents to expose: the app setting when present, else `mcp_tools`.

    Raises `AgentConfigurationError` for a name that is not a hosted agent (a typo must not
    silently hide a tool).
    """
    raw = os.environ.get(MCP_TOOLS_ENV)
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
    """`DURABLE_AGENTS_MCP_WAIT_SECONDS` when set, else the default (200 s).

    Raises `HostingConfigurationError` (at startup) for a value outside 0.1 s to 220 s; one past
    220 s names the front end's limit it would run into.
    """
    raw = os.environ.get(MCP_WAIT_ENV, "").strip()
    try:
        value = number_setting(os.environ, MCP_WAIT_ENV, low=MIN_WAIT_SECONDS, high=MAX_WAIT_SECONDS,
                               unit="seconds")
    except HostingConfigurationError as error:
        if _longer_than_allowed(raw):
            raise HostingConfigurationError(
                f"{error}: Azure's front end ends an HTTP request unanswered after "
                f"{FRONT_END_LIMIT_SECONDS:g} s, so a tool call must have its answer (or its run ids) "
                f"before then"
            ) from None
        raise
    return DEFAULT_WAIT_SECONDS if value is None else value


def _longer_than_allowed(raw: str) -> bool:
    try:
        value = float(raw)
    except ValueError:
        return False
    return math.isfinite(value) and value > MAX_WAIT_SECONDS
