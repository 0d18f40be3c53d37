"""One model call over either wire API: build the request, send it with retries, read the answer."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from state import ChatMessage, Usage

from ._client import call_with_retries, classify_error, get_client
from ._clock import now_iso
from ._convert import (
    Message,
    balanced,
    chat_usage,
    from_chat_message,
    from_responses_output,
    responses_usage,
    to_chat_messages,
    to_responses_input,
)
from ._errors import FailureCode, ModelCallError
from ._events import EventEmitter
from ._settings import Endpoint, ModelSettings
from ._streaming import read_chat_stream, read_responses_stream
from ._structured import ResponseFormat
from ._telemetry import model_call
from ._tools import FunctionTool
from ._unicode import without_lone_surrogates

T = TypeVar("T")


@dataclass(frozen=True)
class ModelOutput:
    """What one model call produced: the assistant message, its usage, and the response id."""

    message: ChatMessage
    usage: Usage | None
    response_id: str | None
    finish_reason: str | None
    model: str | None = None
    """The model that answered, as the service names it (``gen_ai.response.model``)."""


@dataclass(frozen=True)
class CallOptions:
    """Per-call knobs on top of the model settings."""

    temperature: float | None = None
    max_output_tokens: int | None = None


class ModelCaller:
    """Calls one endpoint with one agent's settings; cheap to build per turn."""

    def __init__(self, settings: ModelSettings, endpoint: Endpoint, author_name: str) -> None:
        self.settings = settings
        self.endpoint = endpoint
        self.author_name = author_name

    async def call(
        self,
        *,
        instructions: str,
        messages: Sequence[Message],
        tools: Sequence[FunctionTool] = (),
        response_format: ResponseFormat | None = None,
        previous_response_id: str | None = None,
        store: bool = False,
        options: CallOptions | None = None,
        emitter: EventEmitter | None = None,
    ) -> ModelOutput:
        """Send one request (retrying transient failures); ModelCallError when it fails for good.

        With an active ``emitter`` the answer is streamed and its text deltas emitted as they
        arrive; the returned output is the same as without.
        """
        live = emitter if emitter is not None and emitter.active else None
        opts = options or CallOptions()
        temperature = opts.temperature if opts.temperature is not None else self.settings.sampling.temperature
        max_tokens = (
            opts.max_output_tokens
            if opts.max_output_tokens is not None
            else self.settings.sampling.max_output_tokens
        )
        if self.settings.connection.wire_api == "responses":
            return await self._responses(
                instructions,
                messages,
                tools,
                response_format,
                previous_response_id,
                store,
                temperature,
                max_tokens,
                live,
            )
        return await self._chat(instructions, messages, tools, response_format, temperature, max_tokens, live)

    def _extra(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.settings.sampling.extra_body:
            params.update(self.settings.sampling.extra_body)
        return params

    async def _post(
        self,
        path: str,
        body: dict[str, Any],
        read: Callable[[dict[str, Any]], T],
        emitter: EventEmitter | None = None,
    ) -> T:
        """POST the request body through the SDK client (its auth, Azure routing and errors).

        ``client.post`` rather than ``chat.completions.create``: the typed methods walk the whole
        request through the SDK's TypedDict transform (about 0.2 ms per message, CPU time on the
        entity's worker thread); our body is already wire JSON. ``read`` turns the answer into
        ours inside the attempt, so an answer that is not JSON or not of the expected shape is an
        ``invalid_model_response`` retried like any transient failure (a proxy cut the body short,
        the service had a bad moment), never an internal error.
        """
        client = get_client(self.endpoint)

        async def attempt(timeout: float) -> T:
            response: Any
            try:
                if emitter is not None:
                    response = await self._streamed(client, path, body, timeout, emitter)
                else:
                    response = await client.post(
                        path, cast_to=object, body=body, options={"timeout": timeout}
                    )
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:  # the 200's body did not decode
                raise _invalid(f"the model's answer is not JSON ({exc})") from exc
            try:
                return read(without_lone_surrogates(_as_dict(response), "the model's answer"))
            except ModelCallError:
                raise
            except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
                shape = f"{type(exc).__name__}: {exc}"
                raise _invalid(f"the model's answer has an unexpected shape ({shape})") from exc

        connection = self.settings.connection
        retried = call_with_retries(attempt, connection.retry, connection.timeout)
        return await model_call(self.endpoint, path, body, retried)

    @staticmethod
    async def _streamed(
        client: Any, path: str, body: dict[str, Any], timeout: float, emitter: EventEmitter
    ) -> dict[str, Any]:
        """One streamed attempt, folded into the non-streamed answer. Once text has reached the
        listeners a failure is final: a retry would show them the answer twice."""
        streamed = {**body, "stream": True}
        if path == "/chat/completions":
            streamed["stream_options"] = {"include_usage": True}
        sent_before = emitter.sent
        # Imported here, as agents._client does: the SDK loads on first use (already loaded by then).
        import httpx
        import openai

        try:
            stream = await client.post(
                path,
                cast_to=object,
                body=streamed,
                options={"timeout": timeout},
                stream=True,
                stream_cls=openai.AsyncStream[object],
            )
            reader = read_chat_stream if path == "/chat/completions" else read_responses_stream
            try:
                return await reader(stream, emitter)
            finally:
                await stream.close()
        except httpx.TransportError as exc:
            # The SDK wraps transport errors of the request, not of the stream it hands back: a
            # connection that breaks off mid-answer is the same failure as one that never opened.
            broken = ModelCallError(
                FailureCode.CONNECTION_ERROR, f"the model's stream broke off: {exc!r}", retryable=True
            )
            raise _final_once_streamed(broken, emitter.sent != sent_before) from exc
        except Exception as exc:
            if emitter.sent == sent_before:
                raise
            error = classify_error(exc) if _is_model_error(exc) else None
            if error is None:
                raise
            raise _final_once_streamed(error, True) from exc

    async def _chat(
        self,
        instructions: str,
        messages: Sequence[Message],
        tools: Sequence[FunctionTool],
        response_format: ResponseFormat | None,
        temperature: float | None,
        max_tokens: int | None,
        emitter: EventEmitter | None,
    ) -> ModelOutput:
        wire = to_chat_messages(balanced(messages))
        if instructions:
            wire.insert(0, {"role": "system", "content": instructions})
        params: dict[str, Any] = {"model": self.endpoint.model, "messages": wire}
        if tools:
            params["tools"] = [t.chat_schema() for t in tools]
        if temperature is not None:
            params["temperature"] = temperature
        if max_tokens is not None:
            params["max_completion_tokens"] = max_tokens
        if response_format is not None:
            params["response_format"] = response_format.chat_param()
        self._extra(params)
        return await self._post("/chat/completions", params, self._read_chat, emitter)

    def _read_chat(self, data: dict[str, Any]) -> ModelOutput:
        choices = data.get("choices") or []
        if not choices or not isinstance(choices[0], Mapping):
            raise _invalid("the model answered without a choice")
        choice = choices[0]
        message = from_chat_message(choice.get("message") or {}, self.author_name, now_iso())
        usage = chat_usage(data.get("usage"))
        return ModelOutput(message, usage, data.get("id"), choice.get("finish_reason"), data.get("model"))

    async def _responses(
        self,
        instructions: str,
        messages: Sequence[Message],
        tools: Sequence[FunctionTool],
        response_format: ResponseFormat | None,
        previous_response_id: str | None,
        store: bool,
        temperature: float | None,
        max_tokens: int | None,
        emitter: EventEmitter | None,
    ) -> ModelOutput:
        # With a previous response the service holds the earlier calls, so results must not be
        # dropped as unmatched.
        items = to_responses_input(messages if previous_response_id else balanced(messages))
        params: dict[str, Any] = {"model": self.endpoint.model, "input": items, "store": store}
        if instructions:
            params["instructions"] = instructions
        if previous_response_id:
            params["previous_response_id"] = previous_response_id
        if tools:
            params["tools"] = [t.responses_schema() for t in tools]
        if temperature is not None:
            params["temperature"] = temperature
        if max_tokens is not None:
            params["max_output_tokens"] = max_tokens
        if response_format is not None:
            params["text"] = {"format": response_format.responses_param()}
        self._extra(params)
        return await self._post("/responses", params, self._read_responses, emitter)

    def _read_responses(self, data: dict[str, Any]) -> ModelOutput:
        error = data.get("error")
        if isinstance(error, Mapping) and error:
            raise ModelCallError(
                str(error.get("code") or FailureCode.MODEL_ERROR),
                str(error.get("message") or "the model failed"),
                retryable=False,
            )
        output = [item for item in data.get("output") or () if isinstance(item, Mapping)]
        message = from_responses_output(output, self.author_name, now_iso())
        finish = None
        if data.get("status") == "incomplete":
            details = data.get("incomplete_details") or {}
            reason = details.get("reason") if isinstance(details, Mapping) else None
            finish = "length" if reason == "max_output_tokens" else str(reason or "incomplete")
        usage = responses_usage(data.get("usage"))
        return ModelOutput(message, usage, data.get("id"), finish, data.get("model"))


def _final_once_streamed(error: ModelCallError, streamed: bool) -> ModelCallError:
    """`error` as final once part of the answer reached listeners (a retry would show it twice)."""
    if not streamed or not error.retryable:
        return error
    return ModelCallError(
        error.code,
        f"{error.message} (after part of the answer was streamed)",
        retryable=False,
        status=error.status,
    )


def _is_model_error(exc: BaseException) -> bool:
    import openai

    return isinstance(exc, openai.OpenAIError | TimeoutError | ModelCallError)


def _invalid(message: str) -> ModelCallError:
    # Status 200: the service answered, but not with something we can read.
    return ModelCallError(FailureCode.INVALID_MODEL_RESPONSE, message, retryable=True, status=200)


def _as_dict(response: Any) -> dict[str, Any]:
    if isinstance(response, dict):
        return response
    dump = getattr(response, "model_dump", None)
    if dump is None:
        raise _invalid("the model's answer is not a JSON object")
    return cast(dict[str, Any], dump(mode="json"))
