"""The Agent definition: a few lines of configuration, validated when it is defined."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel

from state import AgentState, TurnFailure

from ._approvals import AwaitingApproval, ToolDecision
from ._context import ContextProvider, check_source_id
from ._context_policy import ArchivedHistory, ContextPolicy, FullHistory, TokenBudget
from ._errors import AgentConfigurationError
from ._events import TurnEventSink
from ._identity import request_identity, same_request
from ._runner import record_failed_turn, run_turn, run_turn_step
from ._settings import HistoryMode, ModelSettings, resolve_endpoint, supports_responses
from ._steps import TurnProgress
from ._structured import ResponseFormat, agent_response_format
from ._telemetry import invoke_agent
from ._tools import FunctionTool
from ._turns import TurnRequest, TurnResult
from .mcp import MCPServer

_AGENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_HISTORY_MODES = ("local", "service")


@dataclass(frozen=True, kw_only=True, eq=False)
class Agent:
    """An agent: instructions, a model, tools, providers and a history mode. Stateless and shared.

    ``run`` executes one turn of one session against that session's ``AgentState``. Defining an
    agent validates it; ``validate()`` additionally checks the model endpoint from the environment.
    """

    name: str
    instructions: str = ""
    model: ModelSettings = field(default_factory=ModelSettings)
    tools: Sequence[FunctionTool | MCPServer | Callable[..., Any]] = ()
    """Python functions (`tool`) and MCP servers (`MCPServer`), whose tools are discovered at
    their first use; `mcp_servers` holds the latter, `tools` the functions."""
    response_format: type[BaseModel] | dict[str, Any] | None = None
    context_providers: Sequence[ContextProvider] = ()
    history_mode: HistoryMode = "local"
    description: str = ""
    max_tool_rounds: int = 8
    tool_timeout: float | None = 120.0
    context: ContextPolicy = field(default_factory=TokenBudget)
    """What the model sees of the history (docs/agents.md "Context policy"): a token budget of
    recent complete turns by default, or `FullHistory()`."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _AGENT_NAME.match(self.name):
            raise AgentConfigurationError(
                f"agent name {self.name!r} must be 1-64 letters, digits, '_' or '-', "
                "starting with a letter or digit"
            )
        if not isinstance(self.instructions, str):
            raise AgentConfigurationError(f"agent {self.name!r}: instructions must be a string")
        if not isinstance(self.model, ModelSettings):
            raise AgentConfigurationError(f"agent {self.name!r}: model must be ModelSettings")
        if self.history_mode not in _HISTORY_MODES:
            raise AgentConfigurationError(
                f"agent {self.name!r}: unknown history mode {self.history_mode!r} (use 'local' or 'service')"
            )
        if not isinstance(self.context, TokenBudget | FullHistory):
            raise AgentConfigurationError(
                f"agent {self.name!r}: context must be TokenBudget(...) or FullHistory(), "
                f"not {self.context!r}"
            )
        if not isinstance(self.max_tool_rounds, int) or self.max_tool_rounds < 1:
            raise AgentConfigurationError(f"agent {self.name!r}: max_tool_rounds must be a positive integer")
        if self.tool_timeout is not None and self.tool_timeout <= 0:
            raise AgentConfigurationError(f"agent {self.name!r}: tool_timeout must be positive or None")
        servers = tuple(t for t in self.tools if isinstance(t, MCPServer))
        tools = tuple(
            t if isinstance(t, FunctionTool) else _as_tool(self.name, t)
            for t in self.tools
            if not isinstance(t, MCPServer)
        )
        object.__setattr__(self, "tools", tools)
        object.__setattr__(self, "_mcp_servers", servers)
        providers = tuple(self.context_providers)
        object.__setattr__(self, "context_providers", providers)
        object.__setattr__(self, "_format", agent_response_format(self.response_format))
        self._check_providers(providers)
        self._check_tool_names()
        if self.history_mode == "service" and self.model.connection.wire_api != "responses":
            raise AgentConfigurationError(
                f"agent {self.name!r}: service-side history needs the Responses API "
                "(ModelSettings(wire_api='responses'))"
            )

    def _check_providers(self, providers: tuple[ContextProvider, ...]) -> None:
        seen: set[str] = set()
        for provider in providers:
            for hook in ("before_model", "after_turn"):
                if not callable(getattr(provider, hook, None)):
                    raise AgentConfigurationError(f"agent {self.name!r}: {provider!r} has no {hook}() hook")
            check_source_id(getattr(provider, "source_id", None))
            if provider.source_id in seen:
                raise AgentConfigurationError(
                    f"agent {self.name!r}: two context providers share source_id {provider.source_id!r}"
                )
            seen.add(provider.source_id)
            if self.history_mode == "service" and getattr(provider, "requires_local_history", False):
                raise AgentConfigurationError(
                    f"agent {self.name!r}: provider {provider.source_id!r} needs local history, "
                    "but the history mode is 'service'"
                )

    def _check_tool_names(self) -> None:
        owners: dict[str, str] = {}
        declared: list[tuple[str, Any]] = [("the agent", t) for t in self.tools]
        for provider in self.context_providers:
            declared.extend((f"provider {provider.source_id!r}", t) for t in getattr(provider, "tools", ()))
        for owner, t in declared:
            if not isinstance(t, FunctionTool):
                raise AgentConfigurationError(
                    f"agent {self.name!r}: {owner} offers {t!r}, which is not a FunctionTool"
                )
            if owner == "the agent" and t.context_param is not None:
                raise AgentConfigurationError(
                    f"agent {self.name!r}: tool {t.name!r} takes a ProviderContext, which only a context "
                    "provider's tools receive"
                )
            if t.name in owners:
                raise AgentConfigurationError(
                    f"agent {self.name!r}: tool name {t.name!r} is used by {owners[t.name]} and by {owner}"
                )
            owners[t.name] = owner
        servers: dict[str, MCPServer] = {}
        for server in self.mcp_servers:
            if server.name in servers:
                raise AgentConfigurationError(
                    f"agent {self.name!r}: two MCP servers are named {server.name!r}"
                )
            servers[server.name] = server
            for name in server.static_names():
                if name in owners:
                    raise AgentConfigurationError(
                        f"agent {self.name!r}: tool name {name!r} is used by {owners[name]} and by "
                        f"MCP server {server.name!r} (give one a tool_prefix)"
                    )
                owners[name] = f"MCP server {server.name!r}"

    @property
    def mcp_servers(self) -> tuple[MCPServer, ...]:
        """The MCP servers whose tools the agent offers (docs/agents.md "Tools of MCP servers")."""
        servers: tuple[MCPServer, ...] = self.__dict__["_mcp_servers"]
        return servers

    @property
    def format(self) -> ResponseFormat | None:
        """The agent's structured output format, normalised (None: plain text)."""
        value: ResponseFormat | None = self.__dict__["_format"]
        return value

    @property
    def all_tools(self) -> tuple[FunctionTool, ...]:
        """The agent's tools followed by those its providers offer."""
        tools: list[FunctionTool] = list(self.tools)  # type: ignore[arg-type]
        for provider in self.context_providers:
            tools.extend(provider.tools)
        return tuple(tools)

    def validate(self) -> None:
        """Also check what depends on the environment: a model endpoint is configured and can
        serve this agent's wire API and history mode. Raises AgentConfigurationError.
        """
        endpoint = resolve_endpoint(self.model)
        for server in self.mcp_servers:
            try:
                server.check_settings()
            except AgentConfigurationError as exc:
                raise AgentConfigurationError(f"agent {self.name!r}: {exc}") from None
        if self.model.connection.wire_api == "responses" and not supports_responses(endpoint):
            raise AgentConfigurationError(
                f"agent {self.name!r}: Azure OpenAI API version {endpoint.api_version} has no Responses API "
                "(set AZURE_OPENAI_API_VERSION to 2025-03-01-preview or later)"
            )

    def model_in_use(self) -> str:
        """The model and endpoint this agent's turns call, for the startup log: no key, and only the
        scheme, host and path of the URL (a query string or user info could hold a secret)."""
        endpoint = resolve_endpoint(self.model)
        url = urlsplit(endpoint.url)
        host = f"{url.hostname}:{url.port}" if url.port else url.hostname or ""
        where = urlunsplit((url.scheme, host, url.path, "", ""))
        auth = "an API key" if endpoint.api_key else "Entra ID" if endpoint.provider == "azure" else "no key"
        return f"model {endpoint.model!r} at {where} ({endpoint.provider}, {auth})"

    def describe(self) -> dict[str, Any]:
        """What the agent offers, as JSON (for listings): name, description, tools, output format."""
        fmt = self.format
        return {
            "name": self.name,
            "description": self.description,
            "historyMode": self.history_mode,
            "wireApi": self.model.connection.wire_api,
            "tools": [{"name": t.name, "description": t.description} for t in self.all_tools],
            "mcpServers": [s.name for s in self.mcp_servers],
            "contextProviders": [p.source_id for p in self.context_providers],
            "responseSchema": fmt.schema if fmt is not None else None,
        }

    async def run(
        self,
        state: AgentState,
        request: TurnRequest,
        archive: ArchivedHistory | None = None,
        on_event: TurnEventSink | None = None,
        *,
        session_id: str | None = None,
    ) -> TurnResult:
        """Run one turn and record it (request and response entries, provider state, service id)
        in ``state``. A model or tool failure gives ``status == "failed"``; it never raises for one.
        A correlation id that already finished returns its recorded result and changes nothing.
        With ``on_event`` the model is streamed and each `TurnEvent` (text deltas, tool calls and
        results, usage) is awaited on it as it happens; what is recorded is the same either way.
        ``session_id``: the session's id as the host names it, for the context providers.
        """
        if not isinstance(state, AgentState):
            raise TypeError(f"run takes an AgentState, not {type(state).__name__}")
        if not isinstance(request, TurnRequest):
            raise TypeError(f"run takes a TurnRequest, not {type(request).__name__}")
        turn = run_turn(self, state, request, archive, on_event, session_id=session_id)
        return await invoke_agent(self, request, turn)

    async def run_step(
        self,
        state: AgentState,
        request: TurnRequest,
        progress: TurnProgress | None,
        archive: ArchivedHistory | None = None,
        on_event: TurnEventSink | None = None,
        *,
        session_id: str | None = None,
        decisions: Mapping[str, ToolDecision] | None = None,
    ) -> TurnResult | TurnProgress | AwaitingApproval:
        """Run the next step of a turn (one model call, or the batch of tool calls the last model
        call asked for) from ``progress``, its finished steps (None: the turn starts). A turn that
        goes on returns its new progress and leaves ``state`` untouched, for the host to record
        before it runs the next step; a turn that ends is recorded in ``state`` as ``run`` records
        it (the same entries, whatever the steps) and its result returned. A step of tool calls
        of which one needs approval and has none in ``decisions`` (by call id) does not run: it
        returns `AwaitingApproval` and leaves ``state`` untouched."""
        if not isinstance(state, AgentState):
            raise TypeError(f"run_step takes an AgentState, not {type(state).__name__}")
        if not isinstance(request, TurnRequest):
            raise TypeError(f"run_step takes a TurnRequest, not {type(request).__name__}")
        step = progress.steps if progress is not None else 0
        turn = run_turn_step(
            self, state, request, progress, archive, on_event, session_id=session_id, decisions=decisions
        )
        return await invoke_agent(self, request, turn, step)

    def request_identity(self, request: TurnRequest) -> str:
        """The hash a run of ``request`` is recorded under (`requestHash`): its messages, the
        response format in effect and its options. Compare it to a stored run's hash to tell a
        retry of the same request from a different one under the same correlation id."""
        return request_identity(self.format, request)

    def same_request(
        self, request: TurnRequest, stored_hash: str | None, stored_request: Mapping[str, Any] | None
    ) -> bool:
        """Whether a stored run (its `requestHash`; its request entry when no hash was stored)
        asked what ``request`` asks. False only when it provably asked something else."""
        return same_request(self.format, request, stored_hash, stored_request)

    def record_failure(
        self,
        state: AgentState,
        request: TurnRequest,
        error: TurnFailure,
        progress: TurnProgress | None = None,
    ) -> TurnResult:
        """Record ``request`` in ``state`` as a failed turn with ``error`` without calling a model (the
        request entry plus a response entry with the messages of ``progress``, the turn's finished
        steps when given, then ``failure`` and an ``error`` content, as ``run`` records a failed
        turn). Provider state and the service thread id are left as they are; a correlation id
        that already finished returns its recorded result and changes nothing.
        """
        return record_failed_turn(self, state, request, error, progress)


def _as_tool(agent_name: str, value: Any) -> FunctionTool:
    if not callable(value):
        raise AgentConfigurationError(f"agent {agent_name!r}: tool {value!r} is not a function")
    return FunctionTool.from_function(value)
