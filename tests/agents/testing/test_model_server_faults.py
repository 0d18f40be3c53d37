"""Error replies, delays, hangs, disconnects, handlers and concurrency, seen by the real openai client."""

from __future__ import annotations

import asyncio
import time

import openai
import pytest
from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletionMessageParam

from agents.testing import ModelRequest, ModelServer, Reply

USER: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hello"}]


@pytest.mark.parametrize(
    ("status", "error_class", "error_type"),
    [
        (400, openai.BadRequestError, "invalid_request_error"),
        (401, openai.AuthenticationError, "invalid_request_error"),
        (403, openai.PermissionDeniedError, "permission_error"),
        (404, openai.NotFoundError, "invalid_request_error"),
        (409, openai.ConflictError, "conflict_error"),
        (422, openai.UnprocessableEntityError, "invalid_request_error"),
        (429, openai.RateLimitError, "requests"),
        (500, openai.InternalServerError, "server_error"),
        (502, openai.InternalServerError, "server_error"),
        (503, openai.InternalServerError, "server_error"),
    ],
)
def test_error_statuses_map_to_openai_exceptions(
    client: OpenAI, model: ModelServer, status: int, error_class: type[openai.APIStatusError], error_type: str
) -> None:
    model.script(Reply.error(status, "scripted failure", code="custom_code", param="messages"))
    with pytest.raises(error_class) as caught:
        client.chat.completions.create(model="m", messages=USER)
    err = caught.value
    assert err.status_code == status
    assert err.body == {
        "message": "scripted failure",
        "type": error_type,
        "param": "messages",
        "code": "custom_code",
    }
    assert err.code == "custom_code"
    assert "scripted failure" in err.message


def test_error_defaults_are_openai_like(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.error(429))
    with pytest.raises(openai.RateLimitError) as caught:
        client.responses.create(model="m", input="x")
    assert caught.value.code == "rate_limit_exceeded"
    assert caught.value.response.headers.get("x-request-id", "").startswith("req_")


def test_429_carries_retry_after(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.error(429, retry_after=7))
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="m", messages=USER)
    headers = caught.value.response.headers
    assert headers["retry-after"] == "7"
    assert headers["retry-after-ms"] == "7000"


def test_client_retry_honours_fractional_retry_after(model: ModelServer) -> None:
    model.script(Reply.error(429, retry_after=0.3), Reply.text("second time lucky"))
    with OpenAI(base_url=model.base_url, api_key="test", max_retries=1) as retrying:
        started = time.monotonic()
        completion = retrying.chat.completions.create(model="m", messages=USER)
        elapsed = time.monotonic() - started
    assert completion.choices[0].message.content == "second time lucky"
    assert len(model.requests) == 2
    assert elapsed >= 0.3


def test_script_exhausted_is_a_non_retryable_500(model: ModelServer) -> None:
    retrying = OpenAI(base_url=model.base_url, api_key="test", max_retries=3)
    with retrying, pytest.raises(openai.InternalServerError) as caught:
        retrying.chat.completions.create(model="m", messages=USER)
    assert caught.value.code == "script_exhausted"
    # x-should-retry: false stops the client from retrying, so exactly one call reached the server.
    assert len(model.requests) == 1


def test_delay_then_reply(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.delay(0.25, then=Reply.text("late")))
    started = time.monotonic()
    completion = client.chat.completions.create(model="m", messages=USER)
    assert time.monotonic() - started >= 0.25
    assert completion.choices[0].message.content == "late"


def test_delay_without_then_answers_offline(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.delay(0.01))
    completion = client.chat.completions.create(model="m", messages=USER)
    assert completion.choices[0].message.content == "echo: hello"


def test_delay_longer_than_client_timeout_times_out(model: ModelServer) -> None:
    model.script(Reply.delay(5, then=Reply.text("too late")))
    impatient = OpenAI(base_url=model.base_url, api_key="test", max_retries=0, timeout=0.3)
    with impatient, pytest.raises(openai.APITimeoutError):
        impatient.chat.completions.create(model="m", messages=USER)


def test_hang_until_client_timeout_then_server_sees_disconnect(model: ModelServer) -> None:
    model.script(Reply.hang(), Reply.text("after the hang"))
    with OpenAI(base_url=model.base_url, api_key="test", max_retries=0, timeout=0.3) as impatient:
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            impatient.chat.completions.create(model="m", messages=USER)
        assert 0.3 <= time.monotonic() - started < 5
        # The server keeps serving after a hung call, and notices the client went away.
        completion = impatient.chat.completions.create(model="m", messages=USER)
    assert completion.choices[0].message.content == "after the hang"
    deadline = time.monotonic() + 5
    while not model.requests[0].disconnected and time.monotonic() < deadline:
        time.sleep(0.01)
    assert model.requests[0].disconnected


async def test_hang_with_async_client_timeout(aclient: AsyncOpenAI, model: ModelServer) -> None:
    model.script(Reply.hang())
    with pytest.raises(openai.APITimeoutError):
        await aclient.with_options(timeout=0.2).responses.create(model="m", input="x")


def test_disconnect_is_a_connection_error(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.disconnect(), Reply.text("back"))
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model="m", messages=USER)
    assert client.chat.completions.create(model="m", messages=USER).choices[0].message.content == "back"


def test_handler_answers_after_script(client: OpenAI, model: ModelServer) -> None:
    seen: list[ModelRequest] = []

    def handler(request: ModelRequest) -> Reply | None:
        seen.append(request)
        if request.last_user_text == "skip":
            return None
        return Reply.text(f"handled {request.api} {request.last_user_text}")

    model.handler = handler
    model.script(Reply.text("scripted first"))
    answers = [
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
        .choices[0]
        .message.content
        for text in ("one", "two")
    ]
    assert answers == ["scripted first", "handled chat two"]
    assert [r.last_user_text for r in seen] == ["two"]
    # Handler returns None and the script is empty: scripted mode says so instead of inventing a reply.
    with pytest.raises(openai.InternalServerError, match="script exhausted"):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "skip"}])


async def test_async_handler(aclient: AsyncOpenAI, model: ModelServer) -> None:
    async def handler(request: ModelRequest) -> Reply:
        await asyncio.sleep(0)
        return Reply.text(str(len(request.messages)))

    model.handler = handler
    response = await aclient.responses.create(model="m", input="x", instructions="sys")
    assert response.output_text == "2"


def test_handler_error_is_reported_not_retried(client: OpenAI, model: ModelServer) -> None:
    def broken(request: ModelRequest) -> Reply:
        raise ValueError("boom")

    model.handler = broken
    with pytest.raises(openai.InternalServerError, match="boom") as caught:
        client.chat.completions.create(model="m", messages=USER)
    assert caught.value.code == "handler_error"
    assert caught.value.response.headers["x-should-retry"] == "false"


async def test_fifty_concurrent_requests(aclient: AsyncOpenAI, model: ModelServer) -> None:
    gate: dict[str, asyncio.Event] = {}
    arrived: list[str] = []

    async def handler(request: ModelRequest) -> Reply:
        # Every call waits until all 50 are in flight: serial handling would time out here.
        event = gate.setdefault("all_in", asyncio.Event())
        text = request.last_user_text
        assert text is not None  # each request carries one user message
        arrived.append(text)
        if len(arrived) == 50:
            event.set()
        await asyncio.wait_for(event.wait(), 10)
        return Reply.text(f"answer to {request.last_user_text}")

    model.handler = handler

    async def one(i: int) -> str | None:
        completion = await aclient.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"q{i}"}]
        )
        return completion.choices[0].message.content

    answers = await asyncio.gather(*(one(i) for i in range(50)))
    assert answers == [f"answer to q{i}" for i in range(50)]
    assert sorted(arrived) == sorted(f"q{i}" for i in range(50))
    assert len(model.requests) == 50


def test_api_key_required_when_configured() -> None:
    with ModelServer(api_key="sekret") as server:
        wrong = OpenAI(base_url=server.base_url, api_key="wrong", max_retries=0)
        with wrong, pytest.raises(openai.AuthenticationError):
            wrong.chat.completions.create(model="m", messages=USER)
        with OpenAI(base_url=server.base_url, api_key="sekret", max_retries=0) as right:
            assert (
                right.chat.completions.create(model="m", messages=USER).choices[0].message.content
                == "echo: hello"
            )
        assert len(server.requests) == 1


def test_unknown_route_and_bad_json(client: OpenAI, model: ModelServer) -> None:
    with pytest.raises(openai.NotFoundError, match="Invalid URL"):
        client.post("/images/generations", body={"model": "m", "prompt": "x"}, cast_to=object)
    with pytest.raises(openai.BadRequestError, match="Missing required parameter: 'model'"):
        client.post("/chat/completions", body={"messages": USER}, cast_to=object)
