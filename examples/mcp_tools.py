"""An agent whose tools live on an MCP server (docs/agents.md "Tools of MCP servers").

`timekeeper` calls the tools of the server the `EXAMPLES_MCP_URL` app setting names; the app hosts
it when that setting is set. `make run` starts the example server for it
(`examples.local_services`) and sets the setting, so the example works without anything else
running.
"""

from __future__ import annotations

import os

from agents import Agent, MCPServer

from .local_services import URL_SETTING

timekeeper = Agent(
    name="timekeeper",
    description="Answers questions about dates and times with the tools of an MCP server.",
    instructions="You answer questions about dates and times. Use your tools; never guess the time.",
    tools=[MCPServer(f"%{URL_SETTING}%", name="example-tools", requires_approval=["set_reminder"])],
)


def mcp_example_agents() -> list[Agent]:
    """The agents of this module the app hosts: `timekeeper` once its server's setting is set."""
    return [timekeeper] if os.environ.get(URL_SETTING) else []
