"""Tools of MCP servers: `MCPServer` in an agent's tools offers the server's tools to the model,
each call a durable step of the turn as a Python tool's is (docs/agents.md "Tools of MCP servers")."""

from ._server import EntraToken, MCPServer, MCPTransport, MissingSetting
from ._tools import Discovery, discover, forget_listings

__all__ = [
    "Discovery",
    "EntraToken",
    "MCPServer",
    "MCPTransport",
    "MissingSetting",
    "discover",
    "forget_listings",
]
