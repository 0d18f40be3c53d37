"""`MCPServer`: an MCP server whose tools an agent may call, as the app's code declares it.

A server's address and credentials come from the app's code and settings only: a header value
names app settings (`%NAME%`, resolved from the environment when a request is made, so a Key Vault
reference in Azure works and no secret sits in code), and `EntraToken` gets a managed-identity
token for an Entra-protected server. Nothing a caller sends chooses a server or its URL.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .._errors import AgentConfigurationError
from .._tools import TOOL_NAME_PATTERN

MCPTransport = Literal["streamable-http", "sse"]
ApprovalChoice = bool | Sequence[str] | Callable[[str, dict[str, Any]], bool]
"""Which calls wait for a person: all (True), none (False), the MCP tool names listed, or what a
predicate on (tool name, arguments) answers."""

_SETTING = re.compile(r"%([A-Za-z_][A-Za-z0-9_]*)%")
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")
_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_RESERVED_HEADERS = frozenset({"idempotency-key", "content-length", "host", "mcp-session-id"})


class MissingSetting(AgentConfigurationError):
    """An app setting a server's URL or header names is not set."""


def settings_named(text: str) -> list[str]:
    """The app settings `text` names (`%NAME%`)."""
    return _SETTING.findall(text)


def resolve_settings(text: str, what: str, environ: Mapping[str, str] | None = None) -> str:
    """`text` with each `%NAME%` replaced by that app setting's value; MissingSetting names the
    first one that is not set (never its value)."""
    env = os.environ if environ is None else environ

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        found = env.get(name)
        if found is None or found == "":
            raise MissingSetting(f"{what} names the app setting {name}, which is not set")
        return found

    return _SETTING.sub(value, text)


@dataclass(frozen=True)
class EntraToken:
    """A Microsoft Entra ID token for the server, from the app's managed identity (or, locally,
    the developer's sign-in): sent as `Authorization: Bearer ...`. `client_id` picks a
    user-assigned identity."""

    scope: str
    client_id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.scope, str) or not self.scope.strip():
            raise AgentConfigurationError("EntraToken: scope must be a non-empty string")


@dataclass(frozen=True, eq=False)
class MCPServer:
    """An MCP server whose tools the agent may call (docs/agents.md "Tools of MCP servers").

    `url` (or an app setting named as `%NAME%`) is the server's endpoint; `name` is how the
    model, the console and the traces name it. Each call of its tools is a durable step of the
    turn, as a Python tool's is.
    """

    url: str
    name: str
    headers: Mapping[str, str] = field(default_factory=dict)
    """Header values name app settings (`"Bearer %OPS_TOOLS_TOKEN%"`); a value without one is refused."""
    allowed_tools: Sequence[str] | None = None
    """The MCP tool names the model may call (None: every tool the server lists)."""
    requires_approval: ApprovalChoice = False
    tool_prefix: str = ""
    """Put before each tool's MCP name (the model's name for it), to keep two servers apart."""
    auth: EntraToken | None = None
    transport: MCPTransport = "streamable-http"
    timeout: float = 30.0
    """Seconds for one request to the server (listing its tools, one call); the agent's
    tool_timeout bounds a call as well."""
    refresh_seconds: float = 300.0
    """How long a process keeps the server's tool list before listing it again."""
    max_result_bytes: int = 1_000_000
    """A result larger than this (as JSON) becomes an error result; it is never stored."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _SERVER_NAME.match(self.name):
            raise AgentConfigurationError(
                f"MCP server name {self.name!r} must be 1-64 letters, digits, '_', '.' or '-'"
            )
        self._check_url()
        object.__setattr__(self, "headers", dict(self.headers))
        for key, value in self.headers.items():
            if not isinstance(key, str) or not _HEADER_NAME.match(key) or key.lower() in _RESERVED_HEADERS:
                raise AgentConfigurationError(f"MCP server {self.name!r}: header {key!r} cannot be set")
            if not isinstance(value, str) or not settings_named(value):
                raise AgentConfigurationError(
                    f'MCP server {self.name!r}: header {key!r} must name an app setting ("Bearer %NAME%"), '
                    "never hold a literal value"
                )
        if self.allowed_tools is not None:
            if isinstance(self.allowed_tools, str) or not all(isinstance(t, str) for t in self.allowed_tools):
                raise AgentConfigurationError(
                    f"MCP server {self.name!r}: allowed_tools must be a list of names"
                )
            object.__setattr__(self, "allowed_tools", tuple(self.allowed_tools))
        rule = self.requires_approval
        if not isinstance(rule, bool) and not callable(rule):
            if isinstance(rule, str) or not all(isinstance(t, str) for t in rule):
                raise AgentConfigurationError(
                    f"MCP server {self.name!r}: requires_approval must be a bool, a list of tool names "
                    "or a predicate"
                )
            object.__setattr__(self, "requires_approval", frozenset(rule))
        if self.tool_prefix and not TOOL_NAME_PATTERN.match(self.tool_prefix):
            raise AgentConfigurationError(
                f"MCP server {self.name!r}: tool_prefix {self.tool_prefix!r} is not a name"
            )
        if self.auth is not None and not isinstance(self.auth, EntraToken):
            raise AgentConfigurationError(f"MCP server {self.name!r}: auth must be EntraToken(scope=...)")
        if self.transport not in ("streamable-http", "sse"):
            raise AgentConfigurationError(
                f"MCP server {self.name!r}: transport must be 'streamable-http' or 'sse'"
            )
        for what, number in (("timeout", self.timeout), ("refresh_seconds", self.refresh_seconds)):
            if not isinstance(number, int | float) or number <= 0:
                raise AgentConfigurationError(f"MCP server {self.name!r}: {what} must be positive")
        if not isinstance(self.max_result_bytes, int) or self.max_result_bytes < 1024:
            raise AgentConfigurationError(f"MCP server {self.name!r}: max_result_bytes must be at least 1024")

    def _check_url(self) -> None:
        if not isinstance(self.url, str) or not self.url:
            raise AgentConfigurationError(f"MCP server {self.name!r}: url must be a string")
        if settings_named(self.url):
            return  # checked when resolved (resolved_url)
        check_url(self.name, self.url)

    def resolved_url(self) -> str:
        """The endpoint, its app settings resolved and checked (MissingSetting, AgentConfigurationError)."""
        url = resolve_settings(self.url, f"MCP server {self.name!r}'s url")
        check_url(self.name, url)
        return url

    def resolved_headers(self) -> dict[str, str]:
        """The headers, their app settings resolved (MissingSetting names one that is not set)."""
        return {
            key: resolve_settings(value, f"MCP server {self.name!r}'s header {key!r}")
            for key, value in self.headers.items()
        }

    def needs_approval(self, tool: str, arguments: dict[str, Any]) -> bool:
        """Whether a call of MCP tool `tool` waits for a decision (a predicate that raises: yes)."""
        rule = self.requires_approval
        if isinstance(rule, bool):
            return rule
        if isinstance(rule, frozenset):
            return tool in rule
        try:
            answer = rule(tool, dict(arguments))  # type: ignore[operator]
        except Exception:
            return True
        return answer if isinstance(answer, bool) else True

    def model_name(self, tool: str) -> str:
        """The name the model calls MCP tool `tool` by."""
        return f"{self.tool_prefix}{tool}"

    def static_names(self) -> tuple[str, ...]:
        """The model's names of the tools known without asking the server (its allowed_tools)."""
        return tuple(self.model_name(t) for t in self.allowed_tools or ())

    def check_settings(self) -> None:
        """Resolve every app setting the server names now: a missing one stops startup."""
        self.resolved_url()
        self.resolved_headers()


def check_url(name: str, url: str) -> None:
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise AgentConfigurationError(f"MCP server {name!r}: url must be an http(s) URL")
    if parsed.username or parsed.password:
        raise AgentConfigurationError(f"MCP server {name!r}: url must not carry credentials (use headers)")


def origin_of(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a URL: the one origin requests for a server may go to."""
    parsed = urllib.parse.urlsplit(url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    return parsed.scheme, (parsed.hostname or "").lower(), port
