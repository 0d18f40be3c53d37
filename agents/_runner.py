"""One turn: providers, model calls, tool rounds, structured output, and recording it in the state."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from state import (
    JSON,
    AgentResponse,
    AgentState,
    ChatMessage,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    TurnFailure,
    Usage,
)

from ._approvals import (
    NO_HOST_REASON,
    AwaitingApproval,
    PendingCall,
    ToolDecision,
    rejected_result,
    undecided_calls,
)
from ._clock import now_iso
from ._context import ContextProvider, ProviderContext, ProviderStateError
from ._context_policy import ArchivedHistory, ContextPolicy, context_history
from ._convert import RAW_ARGUMENTS, Message, add_usage
from ._errors import AgentConfigurationError, FailureCode, ModelCallError, ToolExecutionError, failure
from ._events import EventEmitter, TurnEventSink
from ._identity import format_of, request_entry, request_identity
from ._live import announce_calls, announce_results, announce_usage
from ._model import CallOptions, ModelCaller
from ._settings import HistoryMode, ModelSettings, resolve_endpoint
from ._steps import TurnProgress
from ._structured import ResponseFormat, StructuredOutputError
from ._telemetry import execute_tool, note_exception_type
from ._tool_call import ToolCall, serving
from ._tools import FunctionTool, parse_arguments, to_jsonable
from ._turns import TurnRequest, TurnResult, answer_text
from ._unicode import without_lone_surrogates
from .mcp import MCPServer, discover

log = logging.getLogger("agents")


class TurnAgent(Protocol):
    """What a turn reads of its agent (`agents.Agent` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def instructions(self) -> str: ...

    @property
    def model(self) -> ModelSettings: ...

    @property
    def tools(self) -> Sequence[FunctionTool | MCPServer | Callable[..., Any]]: ...

    @property
    def context_providers(self) -> Sequence[ContextProvider]: ...

    @property
    def mcp_servers(self) -> Sequence[MCPServer]: ...

    @property
    def history_mode(self) -> HistoryMode: ...

    @property
    def max_tool_rounds(self) -> int: ...

    @property
    def tool_timeout(self) -> float | None: ...

    @property
    def context(self) -> ContextPolicy: ...

    @property
    def format(self) -> ResponseFormat | None: ...


class _TurnFailed(Exception):
    """Internal: ends a turn as failed with this error."""

    def __init__(self, error: TurnFailure) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass
class _Turn:
    agent: TurnAgent
    state: AgentState
    request: TurnRequest
    request_messages: list[ChatMessage]
    response_format: ResponseFormat | None
    messages: list[ChatMessage] = field(default_factory=list)
    usage: Usage | None = None
    contexts: list[tuple[ContextProvider, ProviderContext]] = field(default_factory=list)
    service_thread_id: str | None = None
    archive: ArchivedHistory | None = None
    emitter: EventEmitter = field(default_factory=lambda: EventEmitter(None))
    progress: TurnProgress = field(default_factory=TurnProgress)
    """The finished steps this run of the turn starts from."""
    session_id: str | None = None
    """The session's id as the host names it, for the providers (`ProviderContext.session_id`)."""
    one_step: bool = False
    """Run one step only; `paused` then holds the progress when the turn is not finished."""
    paused: TurnProgress | None = None
    decisions: Mapping[str, ToolDecision] = field(default_factory=dict)
    """The decisions made on calls that need approval (by call id)."""
    awaiting: list[PendingCall] | None = None
    """Set when the step did not run: these calls wait for decisions."""

    # --- model access --------------------------------------------------------------------

    def caller(self, settings: ModelSettings | None = None) -> ModelCaller:
        settings = settings or self.agent.model
        try:
            endpoint = resolve_endpoint(settings)
        except AgentConfigurationError as exc:
            raise _TurnFailed(failure(FailureCode.MODEL_NOT_CONFIGURED, str(exc))) from None
        return ModelCaller(settings, endpoint, self.agent.name)

    async def complete(self, prompt: str, instructions: str | None, settings: ModelSettings | None) -> str:
        """ProviderContext.complete: a tool-less call whose usage counts towards the turn."""
        caller = self.caller(settings)
        output = await caller.call(
            instructions=instructions or "",
            messages=[ChatMessage(role="user", contents=[TextContent(text=prompt)])],
        )
        self.usage = add_usage(self.usage, output.usage)
        return answer_text([output.message])

    # --- the turn ------------------------------------------------------------------------

    async def execute(self) -> None:
        agent = self.agent
        self.messages = self.progress.chat_messages()
        self.usage = self.progress.usage_model()
        local = agent.history_mode == "local"
        # The model call reads the stored wire dicts; pydantic messages are built only for
        # providers, whose context exposes the history as ChatMessage models.
        history_wire: list[Message] = []
        if local:
            history_wire.extend(await context_history(agent.context, self.state, self.archive))
        history = list(self.state.replay_messages()) if local and agent.context_providers else []
        for provider in agent.context_providers:
            ctx = ProviderContext(
                agent_name=agent.name,
                correlation_id=self.request.correlation_id,
                # A copy (or a validated model), so a failed turn leaves the stored state untouched.
                state=_provider_state(provider, self._provider_stored(provider.source_id)),
                request_messages=tuple(self.request_messages),
                history=tuple(history),
                history_offset=self.state.archived_messages,
                history_mode=agent.history_mode,
                user_id=self.state.user_id,
                session_id=self.session_id,
                _complete=self.complete,
            )
            self.contexts.append((provider, ctx))

        instructions = [agent.instructions] if agent.instructions else []
        extra_messages: list[ChatMessage] = []
        tools: list[FunctionTool] = [t for t in agent.tools if isinstance(t, FunctionTool)]
        model_history: list[Message] = history_wire
        if self.state.total_entries == 0 and self.progress.steps == 0:
            # The session's first turn, first step (a retried first turn calls it again).
            for provider, ctx in self.contexts:
                await self._provider_call(provider, "on_session_started", provider.on_session_started(ctx))
        for provider, ctx in self.contexts:
            additions = await self._provider_call(provider, "before_model", provider.before_model(ctx))
            tools.extend(t.with_context(ctx) for t in provider.tools)
            if additions is None:
                continue
            instructions.extend(i for i in additions.instructions if i)
            extra_messages.extend(additions.messages)
            tools.extend(t.with_context(ctx) for t in additions.tools)
            if additions.history is not None:
                model_history = list(additions.history)
        notes: list[str] = []
        if agent.mcp_servers:
            owners = {t.name: "a Python tool" for t in tools}
            found = await discover(agent.mcp_servers, owners)
            tools.extend(found.tools)
            notes = found.notes
            if notes:
                # The model is told what is missing; the model call's message records it.
                instructions.append("\n".join(notes))
        by_name = _tools_by_name(tools)

        options = self.request.options
        call_options = CallOptions(options.get("temperature"), options.get("max_output_tokens"))
        max_rounds = int(options.get("max_tool_rounds") or agent.max_tool_rounds)
        caller = self.caller()
        progress = self.progress
        rounds = progress.rounds
        previous_id = progress.previous_response_id
        if previous_id is None and not local and progress.steps == 0:
            previous_id = self.state.service_thread_id
        # What the service has not seen yet (service-side history): the request, or the last
        # tool results after a resumed step.
        pending = [*extra_messages, *self.request_messages]
        if self.messages and self.messages[-1].role != "assistant":
            # A resumed step: what followed the model's last answer (its tool results, then any
            # messages a host added to the turn before this model call).
            last = max((i for i, m in enumerate(self.messages) if m.role == "assistant"), default=-1)
            pending = self.messages[last + 1 :]
        while True:
            calls = _unanswered_calls(self.messages)
            if calls:
                # A tool step: the batch of calls the last model call asked for.
                undecided = undecided_calls(calls, by_name, self.decisions)
                if undecided and self.one_step:
                    # The whole batch waits (agents._approvals); its calls are announced now, as
                    # a batch that runs at once announces them, and not again when it resumes.
                    await announce_calls(self.emitter, calls, by_name)
                    self.awaiting = undecided
                    return
                rounds += 1
                resumed = any(call.call_id in self.decisions for call in calls)
                pending = [await self._tool_step(calls, by_name, announced=resumed)]
            else:
                # A model step.
                sent = (
                    [*model_history, *extra_messages, *self.request_messages, *self.messages]
                    if local
                    else pending
                )
                output = await caller.call(
                    instructions="\n\n".join(instructions),
                    messages=sent,
                    tools=list(by_name.values()),
                    response_format=self.response_format,
                    previous_response_id=previous_id,
                    store=not local,
                    options=call_options,
                    emitter=self.emitter,
                )
                await announce_usage(self.emitter, output.usage)
                self.usage = add_usage(self.usage, output.usage)
                self.messages.append(_noted(output.message, notes))
                if not local:
                    previous_id = output.response_id
                if output.finish_reason == "content_filter":
                    raise _TurnFailed(failure(FailureCode.CONTENT_FILTER, "the model's answer was filtered"))
                if not _unanswered_calls(self.messages):
                    break
                if rounds >= max_rounds:
                    raise _TurnFailed(
                        failure(
                            FailureCode.MAX_TOOL_ROUNDS_EXCEEDED,
                            f"the model still asked for tools after {max_rounds} rounds",
                        )
                    )
            if self.one_step:
                # The step is done and the turn goes on: the host records this and runs the next.
                self.paused = TurnProgress(
                    steps=progress.steps + 1,
                    messages=[_wire(m) for m in self.messages],
                    usage=None if self.usage is None else _wire(self.usage),
                    rounds=rounds,
                    previous_response_id=previous_id,
                    provider_states=self.provider_updates(),
                )
                return

        if self.response_format is not None:
            try:
                # Only a check: the result's `structured` is computed by `turn_result` from what is stored.
                self.response_format.parse_answer(answer_text(self.messages))
            except StructuredOutputError as exc:
                raise _TurnFailed(failure(FailureCode.INVALID_STRUCTURED_OUTPUT, str(exc))) from None
        for provider, ctx in self.contexts:
            ctx.response_messages = tuple(self.messages)
            await self._provider_call(provider, "after_turn", provider.after_turn(ctx))
        self.service_thread_id = previous_id

    async def _tool_step(
        self, calls: list[FunctionCallContent], by_name: dict[str, FunctionTool], announced: bool = False
    ) -> ChatMessage:
        """Run the calls of one model answer together; their results become one tool message
        (`announced`: a batch that waited for decisions, whose `tool.call` events went out then)."""
        if not announced:
            await announce_calls(self.emitter, calls, by_name)
        results = await asyncio.gather(*(self._decided_call(call, by_name) for call in calls))
        await announce_results(self.emitter, results)
        tool_message = ChatMessage(role="tool", contents=list(results), created_at=now_iso())
        self.messages.append(tool_message)
        return tool_message

    async def _decided_call(
        self, call: FunctionCallContent, by_name: dict[str, FunctionTool]
    ) -> FunctionResultContent:
        """Run a call, unless it needs approval and was not given it."""
        if undecided_calls([call], by_name, self.decisions):
            return rejected_result(call, NO_HOST_REASON)  # a run in one piece cannot wait
        decision = self.decisions.get(call.call_id)
        if decision is not None and not decision.approved:
            return rejected_result(call, decision.reason)
        tool = by_name.get(call.name)
        result = await execute_tool(call, tool, self._run_tool(call, by_name))
        if tool is not None and tool.source is not None:
            # The stored result names the MCP server that answered (the console shows it).
            return result.model_copy(update={"server": tool.source.server})
        return result

    async def _provider_call(self, provider: ContextProvider, hook: str, awaitable: Any) -> Any:
        try:
            return await awaitable
        except (_TurnFailed, ModelCallError):
            raise
        except Exception as exc:
            log.exception("context provider %s failed in %s", provider.source_id, hook)
            raise _TurnFailed(
                failure(
                    FailureCode.PROVIDER_ERROR,
                    f"context provider {provider.source_id!r} failed in {hook}: {exc}",
                )
            ) from exc

    async def _run_tool(
        self, call: FunctionCallContent, tools: dict[str, FunctionTool]
    ) -> FunctionResultContent:
        raw = (call.model_extra or {}).get(RAW_ARGUMENTS)
        try:
            if isinstance(raw, str):
                _, reason = parse_arguments(raw)
                raise ToolExecutionError(f"cannot call {call.name!r}: {reason}")
            tool = tools.get(call.name)
            if tool is None:
                raise ToolExecutionError(
                    f"unknown tool {call.name!r}; available: {', '.join(sorted(tools)) or 'none'}"
                )
            timeout = self.agent.tool_timeout
            with serving(ToolCall(self.request.correlation_id, call.call_id)):
                invocation = tool.invoke(call.arguments or {})
                value = await (asyncio.wait_for(invocation, timeout) if timeout else invocation)
            result = without_lone_surrogates(to_jsonable(value), f"tool {call.name!r}'s result")
            return FunctionResultContent(call_id=call.call_id, result=result)
        except ToolExecutionError as exc:
            message = str(exc)
            note_exception_type(exc)
        except TimeoutError as exc:
            message = f"tool {call.name!r} did not finish within {self.agent.tool_timeout} seconds"
            note_exception_type(exc)
        except Exception as exc:
            note_exception_type(exc)
            log.info("tool %s raised %s", call.name, exc, exc_info=True)
            message = f"tool {call.name!r} raised {type(exc).__name__}: {exc}"
        text = without_lone_surrogates(f"Error: {message}", f"tool {call.name!r}'s error")
        return FunctionResultContent(call_id=call.call_id, result=text, isError=True)

    def _provider_stored(self, source_id: str) -> JSON:
        # A resumed turn continues from the provider state its earlier steps left.
        states = self.progress.provider_states
        return states[source_id] if source_id in states else self.state.state_bag.get(source_id)

    def provider_updates(self) -> dict[str, JSON]:
        """Each provider's state as the turn has it now (dumped), for the state bag or the progress."""
        updates: dict[str, JSON] = {}
        for provider, ctx in self.contexts:
            if ctx.state is None and provider.source_id not in self.state.state_bag:
                continue
            try:
                updates[provider.source_id] = provider.dump_state(ctx.state)
            except ProviderStateError as exc:
                raise _TurnFailed(failure(FailureCode.PROVIDER_ERROR, str(exc))) from None
        return updates

    def commit_provider_states(self) -> None:
        self.state.state_bag.update(self.provider_updates())


def _provider_state(provider: ContextProvider, stored: JSON) -> Any:
    try:
        return provider.load_state(stored)
    except ProviderStateError as exc:
        raise _TurnFailed(failure(FailureCode.PROVIDER_ERROR, str(exc))) from None


def _unanswered_calls(messages: Sequence[ChatMessage]) -> list[FunctionCallContent]:
    """The function calls of the last message when it is the model's and asks for tools."""
    if not messages or messages[-1].role == "tool":
        return []
    return [c for c in messages[-1].contents if isinstance(c, FunctionCallContent)]


def _noted(message: ChatMessage, notes: list[str]) -> ChatMessage:
    """The model's message with an error content per tool or MCP server missing from its request
    (`toolsUnavailable`): what the turn's record keeps of it. Model conversions skip error
    contents, and the answer is the message's text, so neither changes."""
    if not notes:
        return message
    extra = [ErrorContent(message=note, error_code="toolsUnavailable") for note in notes]
    return message.model_copy(update={"contents": [*message.contents, *extra]})


def _wire(model: ChatMessage | Usage) -> dict[str, Any]:
    raw: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return raw


def _tools_by_name(tools: Sequence[FunctionTool]) -> dict[str, FunctionTool]:
    by_name: dict[str, FunctionTool] = {}
    for t in tools:
        if t.name in by_name:
            raise _TurnFailed(failure(FailureCode.TOOL_NAME_CONFLICT, f"two tools are named {t.name!r}"))
        by_name[t.name] = t
    return by_name


def _error_message(agent_name: str, error: TurnFailure) -> ChatMessage:
    # The error content keeps reference-format readers informed; `failure` is what we act on.
    return ChatMessage(
        role="assistant",
        author_name=agent_name,
        created_at=now_iso(),
        contents=[
            ErrorContent(
                message=error.message,
                error_code=error.code,
                details={"retryable": error.retryable, "status": error.status},
            )
        ],
    )


def record_failed_turn(
    agent: TurnAgent,
    state: AgentState,
    request: TurnRequest,
    error: TurnFailure,
    progress: TurnProgress | None = None,
) -> TurnResult:
    """Record ``request`` in ``state`` as a failed turn with ``error``, without calling a model: the
    request entry and a response entry holding the messages of ``progress`` (the turn's finished
    steps, if any) and the error, as ``run_turn`` records a failure."""
    done = TurnResult.from_state(state, request.correlation_id)
    if done is not None:
        return done
    finished = progress.chat_messages() if progress is not None else []
    message = _error_message(agent.name, error)
    state.append_request(request_entry(request, format_of(agent.format, request)))
    state.append_response(
        AgentResponse(
            correlation_id=request.correlation_id,
            created_at=now_iso(),
            messages=[*finished, message],
            usage=progress.usage_model() if progress is not None else None,
            failure=error,
        ),
        request_hash=request_identity(agent.format, request),
    )
    return _recorded(state, request.correlation_id)


async def run_turn(
    agent: TurnAgent,
    state: AgentState,
    request: TurnRequest,
    archive: ArchivedHistory | None = None,
    on_event: TurnEventSink | None = None,
    *,
    session_id: str | None = None,
) -> TurnResult:
    """Run one turn and record it in ``state``; failures become a failed turn, never an exception.
    With ``on_event`` the model is streamed and the turn's events sent to it as they happen."""
    outcome = await run_turn_step(
        agent, state, request, None, archive, on_event, one_step=False, session_id=session_id
    )
    assert isinstance(outcome, TurnResult), "a turn run to its end has a result"
    return outcome


async def run_turn_step(
    agent: TurnAgent,
    state: AgentState,
    request: TurnRequest,
    progress: TurnProgress | None,
    archive: ArchivedHistory | None = None,
    on_event: TurnEventSink | None = None,
    *,
    one_step: bool = True,
    session_id: str | None = None,
    decisions: Mapping[str, ToolDecision] | None = None,
) -> TurnResult | TurnProgress | AwaitingApproval:
    """Run the next step of a turn from ``progress`` (its finished steps; None: none yet). When
    the turn goes on, ``state`` is left untouched and the new progress is returned, for the host
    to record; when it ends (finished or failed) it is recorded in ``state`` exactly as
    ``run_turn`` records it, and its result returned."""
    done = TurnResult.from_state(state, request.correlation_id)
    if done is not None:
        return done  # a redelivered request: answer it again, change nothing
    response_format = (
        ResponseFormat.parse(request.response_format) if request.response_format is not None else agent.format
    )
    entry = request_entry(request, response_format)
    request_messages = list(entry.messages)
    turn = _Turn(
        agent,
        state,
        request,
        request_messages,
        response_format,
        archive=archive,
        emitter=EventEmitter(on_event),
        progress=progress or TurnProgress(),
        session_id=session_id,
        one_step=one_step,
        decisions=dict(decisions or {}),
    )
    error: TurnFailure | None = None
    try:
        await turn.execute()
        if turn.awaiting is not None:
            return AwaitingApproval(turn.progress, turn.awaiting)
        if turn.paused is not None:
            return turn.paused
        turn.commit_provider_states()
    except _TurnFailed as exc:
        error = exc.error
    except ModelCallError as exc:
        error = exc.failure
    except Exception as exc:  # a bug must not lose the request: record it as a failed turn
        log.exception("turn %s of agent %s failed", request.correlation_id, agent.name)
        error = failure(FailureCode.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")

    messages = list(turn.messages)
    if error is not None:
        messages.append(_error_message(agent.name, error))
    response_entry = AgentResponse(
        correlation_id=request.correlation_id,
        created_at=now_iso(),
        messages=messages,
        usage=turn.usage,
        failure=error,
    )
    state.append_request(entry)
    try:
        state.append_response(response_entry, request_hash=request_identity(agent.format, request))
    except Exception as exc:  # never leave a request without its response
        log.exception("could not record the response of turn %s", request.correlation_id)
        error = failure(FailureCode.INTERNAL_ERROR, f"the turn's response could not be recorded: {exc}")
        messages = [
            ChatMessage(
                role="assistant", contents=[ErrorContent(message=error.message, error_code=error.code)]
            )
        ]
        state.append_response(
            AgentResponse(
                correlation_id=request.correlation_id,
                created_at=now_iso(),
                messages=messages,
                failure=error,
            ),
            request_hash=request_identity(agent.format, request),
        )
    if error is None and agent.history_mode == "service":
        state.service_thread_id = turn.service_thread_id
    return _recorded(state, request.correlation_id)


def _recorded(state: AgentState, correlation_id: str) -> TurnResult:
    # The result is read back from what was just recorded, the way every later reader (a
    # redelivery, the HTTP API, an orchestration) reads it: one computation, one answer.
    result = TurnResult.from_state(state, correlation_id)
    assert result is not None, "the turn was just recorded"
    return result
