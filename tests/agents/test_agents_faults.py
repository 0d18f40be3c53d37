"""Every model fault ends as a recorded turn: retried when it may pass, failed and typed when not."""

from __future__ import annotations

import socket
import time

import pytest

from agents import Agent, InputMessage, ModelSettings, RetryPolicy, TurnRequest
from agents.testing import ModelServer, Reply
from state import AgentResponse, AgentState, dump_state, load_state


def ask(cid: str, text: str = "hi") -> TurnRequest:
    return TurnRequest(correlation_id=cid, messages=[InputMessage("user", text)])


async def test_429_with_retry_after_then_success(model: ModelServer, settings: ModelSettings) -> None:
    agent = Agent(name="helper", model=settings)
    model.script(Reply.error(429, retry_after=0.3), Reply.text("made it"))
    started = time.monotonic()
    result = await agent.run(AgentState.new(), ask("c1"))
    elapsed = time.monotonic() - started
    assert result.status == "succeeded" and result.text == "made it"
    assert len(model.requests) == 2
    assert elapsed >= 0.3  # Retry-After honoured although our own backoff is ~10 ms


async def test_5xx_exhausting_retries_is_a_retryable_failed_turn(
    model: ModelServer, settings: ModelSettings
) -> None:
    agent = Agent(name="helper", model=settings)
    model.script(Reply.error(500), Reply.error(502), Reply.error(503))
    state = AgentState.new()
    result = await agent.run(state, ask("c1"))
    assert result.status == "failed" and result.error is not None
    assert result.error.retryable is True and result.error.status == 503
    assert "3 attempts" in result.error.message
    assert len(model.requests) == 3  # = RetryPolicy.max_attempts
    stored = load_state(dump_state(state))
    response_entry = stored.entries[1]
    assert isinstance(response_entry, AgentResponse)
    failure = response_entry.failure
    assert failure is not None and (failure.code, failure.retryable, failure.status) == (
        result.error.code,
        True,
        503,
    )
    run = stored.find_run("c1")
    assert run is not None and run.status == "failed"


async def test_400_is_not_retried(model: ModelServer, settings: ModelSettings) -> None:
    agent = Agent(name="helper", model=settings)
    model.script(Reply.error(400, "context too long", code="context_length_exceeded"))
    result = await agent.run(AgentState.new(), ask("c1"))
    assert result.error is not None
    assert (result.error.code, result.error.retryable, result.error.status) == (
        "context_length_exceeded",
        False,
        400,
    )
    assert result.error.message == "context too long"
    assert len(model.requests) == 1


async def test_hang_times_out_into_a_failed_turn(model: ModelServer, settings: ModelSettings) -> None:
    # 1 s per attempt: long enough that a loaded CI machine's server has read the request before
    # the client gives up on it (0.3 s lost the second request under load), short enough to bound.
    quick = settings.replace(timeout=1.0, retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.01))
    agent = Agent(name="helper", model=quick)
    model.script(Reply.hang(), Reply.hang())
    started = time.monotonic()
    result = await agent.run(AgentState.new(), ask("c1"))
    assert result.error is not None
    assert (result.error.code, result.error.retryable, result.error.status) == ("timeout", True, None)
    assert time.monotonic() - started < 8
    assert len(model.requests) == 2


async def test_slow_answer_within_the_timeout_is_fine(model: ModelServer, settings: ModelSettings) -> None:
    agent = Agent(name="helper", model=settings.replace(timeout=2.0))
    model.script(Reply.delay(0.2, Reply.text("slowly")))
    result = await agent.run(AgentState.new(), ask("c1"))
    assert result.text == "slowly"


async def test_disconnect_then_success(model: ModelServer, settings: ModelSettings) -> None:
    agent = Agent(name="helper", model=settings)
    model.script(Reply.disconnect(), Reply.text("back"))
    result = await agent.run(AgentState.new(), ask("c1"))
    assert result.text == "back" and len(model.requests) == 2


async def test_unreachable_endpoint_is_a_retryable_connection_error() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = ModelSettings(
        model="m", base_url=f"http://127.0.0.1:{port}/v1", retry=RetryPolicy(max_attempts=2, base_delay=0.01)
    )
    result = await Agent(name="helper", model=settings).run(AgentState.new(), ask("c1"))
    assert result.error is not None
    assert (result.error.code, result.error.retryable, result.error.status) == (
        "connection_error",
        True,
        None,
    )


@pytest.mark.parametrize(
    ("settings", "env"),
    [
        (ModelSettings(model="gpt", api_key="sk-test"), {}),  # the default api.openai.com
        (ModelSettings(), {"OPENAI_BASE_URL": "https://example.com/v1", "OPENAI_CHAT_MODEL_ID": "m"}),
        (
            ModelSettings(),
            {
                "AZURE_OPENAI_ENDPOINT": "https://x.openai.azure.com",
                "AZURE_OPENAI_CHAT_DEPLOYMENT_NAME": "d",
                "AZURE_OPENAI_API_KEY": "k",
            },
        ),
    ],
)
async def test_loopback_guard_refuses_real_model_services(
    settings: ModelSettings, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    state = AgentState.new()
    result = await Agent(name="helper", model=settings).run(state, ask("c1"))
    assert result.status == "failed" and result.error is not None
    assert (result.error.code, result.error.retryable) == ("model_requests_disabled", False)
    assert "DURABLE_AGENTS_ALLOW_MODEL_REQUESTS" in result.error.message
    assert state.find_run("c1") is not None


async def test_no_model_configured_is_a_failed_turn() -> None:
    result = await Agent(name="helper").run(AgentState.new(), ask("c1"))
    assert result.error is not None and result.error.code == "model_not_configured"
    assert "OPENAI_CHAT_MODEL_ID" in result.error.message


async def test_model_from_environment(model: ModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
    monkeypatch.setenv("OPENAI_CHAT_MODEL_ID", "env-model")
    model.script(Reply.text("from env"))
    result = await Agent(name="helper").run(AgentState.new(), ask("c1"))
    assert result.text == "from env" and model.requests[0].body["model"] == "env-model"


async def test_azure_deployment_route(model: ModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", model.url)
    monkeypatch.setenv("AZURE_OPENAI_CHAT_DEPLOYMENT_NAME", "my-deployment")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-key")
    model.script(Reply.text("from azure"))
    result = await Agent(name="helper").run(AgentState.new(), ask("c1"))
    assert result.text == "from azure"
    assert model.requests[0].path == "/openai/deployments/my-deployment/chat/completions"
    assert model.requests[0].headers.get("api-key") == "azure-key"


MALFORMED_200S = [
    '{"id": "chatcmpl-1", "choices": [{"message": {"role": "assist',  # cut short
    "<html>502 Bad Gateway</html>",
    '{"id": "chatcmpl-1", "choices": "none"}',
    '{"id": "chatcmpl-1", "choices": [{"message": 5}]}',
    '["not", "an", "object"]',
]


@pytest.mark.parametrize("body", MALFORMED_200S)
async def test_a_malformed_200_is_retried_then_a_retryable_invalid_model_response(
    model: ModelServer, settings: ModelSettings, body: str
) -> None:
    agent = Agent(name="helper", model=settings)
    model.script(Reply.raw(body), Reply.raw(body), Reply.raw(body))
    state = AgentState.new()
    result = await agent.run(state, ask("c1"))
    assert result.status == "failed" and result.error is not None
    assert (result.error.code, result.error.retryable, result.error.status) == (
        "invalid_model_response",
        True,
        200,
    )
    assert len(model.requests) == 3  # retried like any transient failure
    run = load_state(dump_state(state)).find_run("c1")
    assert run is not None and run.status == "failed"


@pytest.mark.parametrize("wire_api", ["chat", "responses"])
async def test_a_malformed_200_then_a_good_answer_succeeds(
    model: ModelServer, settings: ModelSettings, wire_api: str
) -> None:
    agent = Agent(name="helper", model=settings.replace(wire_api=wire_api))
    model.script(Reply.raw('{"output": [{"type": "mess'), Reply.text("fine now"))
    result = await agent.run(AgentState.new(), ask("c1"))
    assert result.status == "succeeded" and result.text == "fine now"
    assert len(model.requests) == 2
