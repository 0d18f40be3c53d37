"""A2A push notifications with the official `a2a-sdk` client: a task's push config is its run's
webhook (hosting.webhooks), so the push a loopback receiver gets is signed, retried through its
500s with one delivery id, carries the config's token and the task as a2a-sdk's own server pushes
it (a StreamResponse); configs set on a running or ended task, read, listed and deleted; a host the
app does not allow, or another user's task, refused."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from e2e_support import FUNCTION_KEY, HostProcess, eventually
from google.protobuf.json_format import Parse
from webhook_support import Receiver, verify, webhook_host, webhook_settings

from agents.testing import ModelServer, Reply

SECRET = "e2e-push-secret"


@pytest.fixture(scope="module")
def push_host(
    receiver: Receiver, model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostProcess]:
    env = webhook_settings(receiver.port, SECRET)
    with webhook_host(tmp_path_factory.mktemp("a2a-push-host"), model_server.base_url, env) as host:
        yield host


async def _client(host: HostProcess, user: str = "alice") -> tuple[Any, httpx.AsyncClient]:
    http = httpx.AsyncClient(headers={"x-functions-key": FUNCTION_KEY}, params={"user_id": user}, timeout=60)
    factory = ClientFactory(ClientConfig(httpx_client=http, streaming=False))
    client = await factory.create_from_url(f"{host.url}/api/a2a/assistant")
    return client, http


def _message(text: str) -> pb.Message:
    return pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER, parts=[pb.Part(text=text)])


async def _send(client: Any, text: str, push: pb.TaskPushNotificationConfig | None = None) -> pb.Task:
    configuration = pb.SendMessageConfiguration()
    if push is not None:
        configuration.task_push_notification_config.CopyFrom(push)
    request = pb.SendMessageRequest(message=_message(text), configuration=configuration)
    tasks = [e.task async for e in client.send_message(request) if e.HasField("task")]
    assert tasks
    return tasks[-1]


def _pushed(receiver: Receiver, path: str, answered: int = 200) -> list[Any]:
    return [d for d in receiver.to(path) if d.answered == answered]


async def _arrived(receiver: Receiver, path: str) -> None:
    async def probe() -> bool:
        return bool(_pushed(receiver, path))

    await eventually(probe, f"a push to {path}", timeout=30)


async def test_a_task_is_pushed_signed_with_its_token_through_the_receivers_failures(
    push_host: HostProcess, receiver: Receiver, model: ModelServer
) -> None:
    model.script(Reply.text("pushed answer"))
    client, http = await _client(push_host)
    path = f"/flaky/{uuid.uuid4().hex}"
    config = pb.TaskPushNotificationConfig(url=f"http://127.0.0.1:{receiver.port}{path}", token="tok-1")
    try:
        card = await A2ACardResolver(http, f"{push_host.url}/api/a2a/assistant").get_agent_card()
        assert card.capabilities.push_notifications
        done = await _send(client, "Hello", config)
        assert done.status.state == pb.TASK_STATE_COMPLETED
        await _arrived(receiver, path)
    finally:
        await client.close()
        await http.aclose()
    attempts = receiver.to(path)
    assert [a.answered for a in attempts] == [500, 500, 200]
    assert len({a.headers["X-Webhook-Id"] for a in attempts}) == 1
    final = attempts[-1]
    assert final.headers["X-A2A-Notification-Token"] == "tok-1"
    assert verify(SECRET, final.headers, final.body)
    pushed = Parse(final.body.decode(), pb.StreamResponse())
    assert pushed.task.id == done.id and pushed.task.status.state == pb.TASK_STATE_COMPLETED
    assert "pushed answer" in json.dumps(json.loads(final.body))


async def test_configs_on_an_ended_task_read_listed_deleted_and_refused(
    push_host: HostProcess, receiver: Receiver, model: ModelServer
) -> None:
    model.script(Reply.text("first"))
    client, http = await _client(push_host)
    other, other_http = await _client(push_host, user="bob")
    path = f"/ok/{uuid.uuid4().hex}"
    try:
        done = await _send(client, "Hello")
        url = f"http://127.0.0.1:{receiver.port}{path}"
        made = await client.create_task_push_notification_config(
            pb.TaskPushNotificationConfig(task_id=done.id, url=url)
        )
        assert made.url == url and made.task_id == done.id
        await _arrived(receiver, path)  # ended already: pushed at once
        got = await client.get_task_push_notification_config(
            pb.GetTaskPushNotificationConfigRequest(task_id=done.id, id=made.id)
        )
        assert got.url == url
        listed = await client.list_task_push_notification_configs(
            pb.ListTaskPushNotificationConfigsRequest(task_id=done.id)
        )
        assert [c.url for c in listed.configs] == [url]
        with pytest.raises(InvalidParamsError):  # a host the app does not allow
            await client.create_task_push_notification_config(
                pb.TaskPushNotificationConfig(task_id=done.id, url="https://elsewhere.example.com/hook")
            )
        with pytest.raises(TaskNotFoundError):  # another user's task
            await other.create_task_push_notification_config(
                pb.TaskPushNotificationConfig(task_id=done.id, url=url)
            )
        with pytest.raises(TaskNotFoundError):
            await other.list_task_push_notification_configs(
                pb.ListTaskPushNotificationConfigsRequest(task_id=done.id)
            )
        await client.delete_task_push_notification_config(
            pb.DeleteTaskPushNotificationConfigRequest(task_id=done.id, id=made.id)
        )
    finally:
        for c, h in ((client, http), (other, other_http)):
            await c.close()
            await h.aclose()
    assert len(_pushed(receiver, path)) == 1
