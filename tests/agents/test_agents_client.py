"""The model client: one client per (endpoint, event loop), error classification, backoff."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import random
import threading
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import aiohttp
import openai
import pytest

from agents import ModelCallError, ModelSettings, RetryPolicy
from agents._client import backoff_delay, call_with_retries, classify_error, get_client, retry_after_seconds
from agents._settings import resolve_endpoint

# openai 1.x and 2.x build on httpx, 3.x on httpx2: the errors take the transport's own types.
_transport: Any = importlib.import_module("httpx2" if importlib.util.find_spec("httpx2") else "httpx")

_REQUEST = _transport.Request("POST", "http://127.0.0.1/v1/chat/completions")


def _status_error(
    status: int, body: object = None, headers: dict[str, str] | None = None
) -> openai.APIStatusError:
    response = _transport.Response(status, headers=headers or {}, request=_REQUEST)
    return openai.APIStatusError(f"Error code: {status}", response=response, body=body)


@pytest.mark.parametrize(
    ("status", "body", "code", "retryable"),
    [
        (429, {"code": "rate_limit_exceeded", "message": "slow"}, "rate_limit_exceeded", True),
        (429, {"code": "insufficient_quota", "message": "pay"}, "insufficient_quota", False),
        (500, None, "model_server_error", True),
        (503, {"message": "overloaded"}, "model_server_error", True),
        (400, {"code": "context_length_exceeded", "message": "too long"}, "context_length_exceeded", False),
        (401, None, "authentication_failed", False),
        (404, None, "model_not_found", False),
        (408, None, "timeout", True),
    ],
)
def test_classify_status_errors(status: int, body: object, code: str, retryable: bool) -> None:
    error = classify_error(_status_error(status, body))
    assert (error.code, error.retryable, error.status) == (code, retryable, status)
    if isinstance(body, dict):
        assert error.message == body["message"]


def test_should_retry_header_overrides() -> None:
    assert not classify_error(_status_error(500, headers={"x-should-retry": "false"})).retryable
    assert classify_error(_status_error(400, headers={"x-should-retry": "true"})).retryable


def test_classify_transport_errors() -> None:
    timeout = classify_error(openai.APITimeoutError(_REQUEST))
    assert (timeout.code, timeout.retryable, timeout.status) == ("timeout", True, None)
    assert classify_error(TimeoutError()).code == "timeout"
    conn = classify_error(openai.APIConnectionError(request=_REQUEST))
    assert (conn.code, conn.retryable) == ("connection_error", True)
    with pytest.raises(TypeError):
        classify_error(ValueError("not ours"))


def _reported_as_timeout(cause: BaseException) -> openai.APITimeoutError:
    """What the SDK's aiohttp transport raises for ``cause``: a ConnectTimeout, then APITimeoutError."""
    try:
        try:
            raise cause
        except aiohttp.ClientError as error:
            raise _transport.ConnectTimeout(str(error)) from error
    except _transport.ConnectTimeout as error:
        try:
            raise openai.APITimeoutError(_REQUEST) from error
        except openai.APITimeoutError as reported:
            return reported


def test_a_refused_connection_the_aiohttp_transport_calls_a_timeout_is_a_connection_error() -> None:
    refused = aiohttp.ClientConnectorError(
        aiohttp.client_reqrep.ConnectionKey("127.0.0.1", 9, False, True, None, None, None),
        ConnectionRefusedError(111, "Connection refused"),
    )
    error = classify_error(_reported_as_timeout(refused))
    assert (error.code, error.retryable) == ("connection_error", True)
    assert "Connection refused" in error.message
    disconnected = classify_error(_reported_as_timeout(aiohttp.ServerDisconnectedError()))
    assert disconnected.code == "connection_error"
    for timeout in (aiohttp.ServerTimeoutError("read"), aiohttp.ConnectionTimeoutError("connect")):
        assert classify_error(_reported_as_timeout(timeout)).code == "timeout"


def test_retry_after_forms() -> None:
    assert retry_after_seconds(_status_error(429, headers={"retry-after": "2"})) == 2.0
    assert (
        retry_after_seconds(_status_error(429, headers={"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    )
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 < (retry_after_seconds(_status_error(429, headers={"retry-after": later})) or 0) <= 30
    assert retry_after_seconds(_status_error(429, headers={"retry-after": "soon"})) is None
    assert retry_after_seconds(_status_error(429)) is None
    assert retry_after_seconds(ValueError()) is None


def test_backoff_grows_with_jitter_and_honours_retry_after() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=8.0)
    rng = random.Random(7)
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (6, 8.0)]:
        delays = [backoff_delay(attempt, policy, None, rng) for _ in range(50)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(set(delays)) > 1  # jitter
    assert backoff_delay(1, policy, 5.0, rng) == 5.0


async def test_call_with_retries_stops_on_non_retryable_and_counts_attempts() -> None:
    calls: list[float] = []

    async def failing(timeout: float) -> None:
        calls.append(timeout)
        raise _status_error(503)

    policy = RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.002)
    with pytest.raises(ModelCallError) as caught:
        await call_with_retries(failing, policy, timeout=1.0)
    assert len(calls) == 3 and caught.value.retryable and "3 attempts" in caught.value.message

    calls.clear()

    async def bad(timeout: float) -> None:
        calls.append(timeout)
        raise _status_error(400)

    with pytest.raises(ModelCallError) as caught:
        await call_with_retries(bad, policy, timeout=1.0)
    assert len(calls) == 1 and not caught.value.retryable


async def test_deadline_bounds_the_whole_retry_loop() -> None:
    async def slow(timeout: float) -> None:
        await asyncio.sleep(10)

    policy = RetryPolicy(max_attempts=10, base_delay=0.01, max_delay=0.01, deadline=0.3)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(ModelCallError) as caught:
        await call_with_retries(slow, policy, timeout=5.0)
    assert caught.value.code == "timeout"
    assert loop.time() - started < 1.5


async def test_one_client_per_endpoint_and_loop() -> None:
    endpoint = resolve_endpoint(ModelSettings(model="m", base_url="http://127.0.0.1:9/v1"), {})
    first = get_client(endpoint)
    assert get_client(endpoint) is first
    assert first.max_retries == 0  # retries are ours
    other_endpoint = resolve_endpoint(ModelSettings(model="m", base_url="http://127.0.0.1:10/v1"), {})
    assert get_client(other_endpoint) is not first

    found: list[object] = []

    def in_another_thread() -> None:
        async def grab() -> None:
            found.append(get_client(endpoint))

        asyncio.run(grab())

    thread = threading.Thread(target=in_another_thread)
    thread.start()
    thread.join()
    assert found and found[0] is not first


async def test_azure_client_with_key() -> None:
    endpoint = resolve_endpoint(
        ModelSettings(provider="azure", azure_endpoint="http://127.0.0.1:9", model="dep", api_key="k"), {}
    )
    client = get_client(endpoint)
    assert isinstance(client, openai.AsyncAzureOpenAI)
    # The key is used as given (no Entra ID provider), against the configured resource.
    assert client.api_key == "k" and client._azure_ad_token_provider is None
    assert str(client.base_url).startswith("http://127.0.0.1:9/")
    assert client._api_version == endpoint.api_version


async def test_azure_client_without_key_uses_entra_id_token_provider() -> None:
    endpoint = resolve_endpoint(
        ModelSettings(provider="azure", azure_endpoint="http://127.0.0.1:9", model="dep"), {}
    )
    assert endpoint.api_key is None
    client = get_client(endpoint)  # builds DefaultAzureCredential lazily; no token is fetched yet
    assert isinstance(client, openai.AsyncAzureOpenAI)
    assert client._azure_ad_token_provider is not None


def test_clients_of_closed_loops_are_dropped() -> None:
    from agents import _client

    endpoint = resolve_endpoint(ModelSettings(model="m", base_url="http://127.0.0.1:9/v1"), {})

    async def grab() -> None:
        get_client(endpoint)

    loop = asyncio.new_event_loop()
    loop.run_until_complete(grab())
    loop.close()
    assert loop in _client._clients
    other = resolve_endpoint(ModelSettings(model="m2", base_url="http://127.0.0.1:9/v1"), {})

    async def grab_other() -> None:
        get_client(other)

    asyncio.run(grab_other())
    assert loop not in _client._clients
