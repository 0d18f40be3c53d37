"""Webhooks on the real host over real sockets: a run naming a webhook has its run resource
POSTed, signed, to a receiver on loopback when it ends (succeeded, failed, cancelled), retried
through 500s and a timeout with the same delivery id, never following a redirect, never reading a
big answer, and still delivered after a kill -9 of the host mid-turn; a host not allowed, or no
allowlist at all, is a 400 problem before anything is stored."""

from __future__ import annotations

import json
import pathlib
import time
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from e2e_support import Client, HostProcess, eventually
from webhook_support import Receiver, verify, webhook_host, webhook_settings

from agents.testing import ModelServer, Reply

AGENT = "assistant"
SECRET = "e2e-webhook-secret"


@pytest.fixture(scope="module")
def hook_host(
    receiver: Receiver, model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostProcess]:
    env = webhook_settings(receiver.port, SECRET, hosts="hooks.example.com")
    with webhook_host(tmp_path_factory.mktemp("webhook-host"), model_server.base_url, env) as host:
        yield host


@pytest.fixture
def hooks(http: Any, hook_host: HostProcess, model: ModelServer) -> Client:
    return Client(http, hook_host.url)


def run_path(session: str, run: str) -> str:
    return f"/api/agents/{AGENT}/sessions/{session}/runs/{run}"


async def delivered(client: Client, session: str, run: str, timeout: float = 30.0) -> dict[str, Any]:
    """The run resource once its webhook's delivery has ended."""

    async def done() -> dict[str, Any] | None:
        answer = await client.get(run_path(session, run))
        body: dict[str, Any] = answer.json()
        hook = body.get("webhook") or {}
        return body if hook.get("status") in ("delivered", "failed", "no_run") else None

    result: dict[str, Any] = await eventually(done, f"the webhook of {run} delivered", timeout=timeout)
    return result


def hook(receiver: Receiver, path: str) -> dict[str, str]:
    return {"url": f"http://127.0.0.1:{receiver.port}{path}"}


async def test_a_run_is_delivered_once_through_two_failures_signed_with_one_id(
    hooks: Client, receiver: Receiver, model: ModelServer
) -> None:
    model.script(Reply.text("hello there"))
    session, run = "hook-flaky", "hook-flaky-1"
    answer = await hooks.run(AGENT, "hi", session, correlation_id=run, webhook=hook(receiver, "/flaky/a"))
    assert answer.status == 200, answer.body
    resource = await delivered(hooks, session, run)
    shown = resource["webhook"]
    assert shown["status"] == "delivered" and shown["attempts"] == 3, shown
    attempts = receiver.to("/flaky/a")
    assert [d.answered for d in attempts] == [500, 500, 200]
    assert len({d.headers["X-Webhook-Id"] for d in attempts}) == 1
    assert attempts[0].headers["X-Webhook-Id"] == shown["delivery_id"]
    for attempt in attempts:
        assert attempt.headers["Content-Type"] == "application/json"
        assert attempt.headers["X-Webhook-Timestamp"].isdigit()
        assert verify(SECRET, attempt.headers, attempt.body)
        assert not verify("another-secret", attempt.headers, attempt.body)
    body = json.loads(attempts[-1].body)
    assert body["status"] == "succeeded" and body["response"]["text"] == "hello there"
    assert body["correlation_id"] == run and body["session_id"] == session
    without = {k: v for k, v in resource.items() if k != "webhook"}
    assert body == without  # the same JSON as GET .../runs/{id}


async def test_failed_and_cancelled_runs_are_delivered(
    hooks: Client, receiver: Receiver, model: ModelServer
) -> None:
    model.script(Reply.error(400, "Bad request.", code="invalid_value"))
    answer = await hooks.run(AGENT, "fail", "hook-failed", correlation_id="hook-failed-1",
                             webhook=hook(receiver, "/ok/failed"))
    assert answer.status == 502, answer.body  # the model's failure
    resource = await delivered(hooks, "hook-failed", "hook-failed-1")
    assert resource["webhook"]["status"] == "delivered"
    sent = json.loads(receiver.to("/ok/failed")[0].body)
    assert sent["status"] == "failed" and sent["error"]["code"]

    model.script(Reply.delay(30, Reply.text("too late")))
    session, run = "hook-cancel", "hook-cancel-1"
    answer = await hooks.run(AGENT, "wait", session, correlation_id=run, wait_for_response=False,
                             webhook=hook(receiver, "/ok/cancelled"))
    assert answer.status == 202, answer.body
    cancel = await hooks.post(f"{run_path(session, run)}/cancel")
    assert cancel.status == 202, cancel.body
    resource = await delivered(hooks, session, run)
    assert resource["webhook"]["status"] == "delivered"
    sent = json.loads(receiver.to("/ok/cancelled")[0].body)
    assert sent["status"] == "cancelled"


async def test_a_redirect_is_not_followed_and_a_4xx_is_final(
    hooks: Client, receiver: Receiver, model: ModelServer
) -> None:
    model.script(Reply.text("one"), Reply.text("two"))
    await hooks.run(AGENT, "hi", "hook-redirect", correlation_id="hook-redirect-1",
                    webhook=hook(receiver, "/redirect/a"))
    await hooks.run(AGENT, "hi", "hook-gone", correlation_id="hook-gone-1", webhook=hook(receiver, "/gone/a"))
    redirected = (await delivered(hooks, "hook-redirect", "hook-redirect-1"))["webhook"]
    gone = (await delivered(hooks, "hook-gone", "hook-gone-1"))["webhook"]
    assert redirected["status"] == "failed" and redirected["attempts"] == 1, redirected
    assert redirected["last_status_code"] == 302
    assert gone["status"] == "failed" and gone["attempts"] == 1 and gone["last_status_code"] == 410, gone
    assert len(receiver.to("/redirect/a")) == 1 and len(receiver.to("/gone/a")) == 1
    assert receiver.to("/ok/moved") == []


async def test_a_big_answer_is_not_read(hooks: Client, receiver: Receiver, model: ModelServer) -> None:
    model.script(Reply.text("big"))
    started = time.monotonic()
    await hooks.run(AGENT, "hi", "hook-big", correlation_id="hook-big-1", webhook=hook(receiver, "/big/a"))
    shown = (await delivered(hooks, "hook-big", "hook-big-1"))["webhook"]
    assert shown["status"] == "delivered" and shown["attempts"] == 1, shown
    assert time.monotonic() - started < 15  # well under the 6.5 GB the receiver would send


async def test_a_host_not_allowed_is_refused_before_anything_is_stored(
    hooks: Client, model: ModelServer
) -> None:
    for url, why in (
        ("https://evil.example.com/x", "not in the app setting DURABLE_AGENTS_WEBHOOK_HOSTS"),
        ("http://hooks.example.com/x", "must be https"),
        ("https://user:pw@hooks.example.com/x", "user name"),
        ("ftp://hooks.example.com/x", "http or https"),
        ("https://127.0.0.1/x", "not in the app setting"),
    ):
        answer = await hooks.run(AGENT, "hi", "hook-refused", webhook={"url": url})
        assert answer.status == 400, (url, answer.body)
        problem = answer.json()
        assert answer.content_type == "application/problem+json"
        assert why in problem["detail"] and problem["field"] == "webhook.url", problem
    assert (await hooks.get(f"/api/agents/{AGENT}/sessions/hook-refused")).status == 404


async def test_no_allowlist_refuses_every_webhook(client: Client, model: ModelServer) -> None:
    answer = await client.run(AGENT, "hi", "hook-unset", webhook={"url": "https://hooks.example.com/x"})
    assert answer.status == 400, answer.body
    assert "DURABLE_AGENTS_WEBHOOK_HOSTS" in answer.json()["detail"]
    assert (await client.get(f"/api/agents/{AGENT}/sessions/hook-unset")).status == 404



async def test_a_steer_takes_no_webhook(hooks: Client, receiver: Receiver) -> None:
    answer = await hooks.run(AGENT, "hi", "hook-steer", multitask_strategy="steer",
                             webhook=hook(receiver, "/ok/steer"))
    assert answer.status == 400, answer.body
    assert answer.json()["field"] == "webhook"
    assert (await hooks.get(f"/api/agents/{AGENT}/sessions/hook-steer")).status == 404


async def test_a_delivery_survives_a_kill_9_of_the_host(
    receiver: Receiver, model: ModelServer, tmp_path: pathlib.Path
) -> None:
    env = {
        "DURABLE_AGENTS_WEBHOOK_HOSTS": f"127.0.0.1:{receiver.port}",
        "DURABLE_AGENTS_WEBHOOK_SECRET": SECRET,
        "DURABLE_AGENTS_WEBHOOK_FIRST_RETRY_SECONDS": "0.2",
        "DURABLE_AGENTS_WEBHOOK_POLL_SECONDS": "0.2",
    }
    host = HostProcess(tmp_path / "data", model.base_url, tmp_path / "host.log", extra_env=env).start()
    connector = aiohttp.TCPConnector(force_close=True)  # nothing reused across the restart
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30)) as http:
        try:
            model.script(Reply.hang())  # the turn is in its model call when the host dies
            client = Client(http, host.url)
            answer = await client.run(AGENT, "hi", "hook-kill", correlation_id="hook-kill-1",
                                      wait_for_response=False, webhook=hook(receiver, "/ok/killed"))
            assert answer.status == 202, answer.body

            async def model_called() -> bool:
                return len(model.requests) == 1

            await eventually(model_called, "the turn reaching the model")
            host.kill()
        finally:
            host.kill()
        model.script(Reply.text("after the restart"))
        host.start()
        try:
            client = Client(http, host.url)
            resource = await delivered(client, "hook-kill", "hook-kill-1", timeout=60)
        finally:
            host.stop()
    assert resource["webhook"]["status"] == "delivered", (resource, host.log()[-3000:])
    sent = receiver.to("/ok/killed")
    assert len({d.headers["X-Webhook-Id"] for d in sent}) == 1 and sent[-1].answered == 200
    body = json.loads(sent[-1].body)
    assert body["status"] == "succeeded" and body["response"]["text"] == "after the restart"



async def test_an_attempt_that_times_out_is_tried_again(
    hooks: Client, receiver: Receiver, model: ModelServer
) -> None:
    model.script(Reply.text("slow"))
    started = time.monotonic()
    await hooks.run(AGENT, "hi", "hook-slow", correlation_id="hook-slow-1", webhook=hook(receiver, "/slow/a"))
    shown = (await delivered(hooks, "hook-slow", "hook-slow-1"))["webhook"]
    assert shown["status"] == "delivered" and shown["attempts"] == 2, shown
    assert [d.answered for d in receiver.to("/slow/a")] == [0, 200]
    assert time.monotonic() - started < 20  # the 2 s timeout, not the receiver's 30 s
