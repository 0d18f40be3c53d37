"""Hosted agents as MCP tools through the Azure Functions MCP extension's tool trigger (docs/mcp.md)."""

from ._config import MCP_TOOLS_ENV, MCP_WAIT_ENV, McpTools, ToolSpec, chosen_agents, tool_spec
from ._register import TRIGGER_TYPE, register_mcp_tools
from ._tool import AgentTool, ToolCall, parse_call

__all__ = [
    "MCP_TOOLS_ENV",
    "MCP_WAIT_ENV",
    "TRIGGER_TYPE",
    "AgentTool",
    "McpTools",
    "ToolCall",
    "ToolSpec",
    "chosen_agents",
    "parse_call",
    "register_mcp_tools",
    "tool_spec",
]
