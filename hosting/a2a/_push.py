"""A2A push notifications on the app's webhook delivery (hosting.webhooks): a task's push config
is the webhook of its run, in the `a2a` format, so the push is signed, durable, retried and held
to the hosts the app allows like every webhook. What is pushed is what a2a-sdk's own server
pushes: a `StreamResponse` holding the task, with the config's token as
`X-A2A-Notification-Token`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import InvalidParamsError, PushNotificationNotSupportedError
from google.protobuf.json_format import MessageToJson

from .._settings import current
from ..webhooks import HOSTS_ENV, SECRET_ENV, EndedRun, Rendered, Webhook
from ._routes import A2A_FORMAT
from ._tasks import TaskRef

TOKEN_HEADER = "X-A2A-Notification-Token"
CONFIG_ID = "push"
"""The one push config a task has (its run has one webhook)."""


def push_enabled() -> bool:
    """Whether the app delivers webhooks at all (both settings set): without them the card says
    `pushNotifications: false` and every push method is PushNotificationNotSupported. As the
    app's settings were read at startup."""
    return current().webhooks.enabled


def webhook_of(config: pb.TaskPushNotificationConfig) -> dict[str, Any]:
    """The run body's `webhook` for a push config; the config's `authentication` is not offered
    (the push is signed instead, and the token is sent)."""
    if not push_enabled():
        raise PushNotificationNotSupportedError(
            message=f"push notifications are off: the app settings {HOSTS_ENV} and {SECRET_ENV} are unset"
        )
    if not config.url:
        raise InvalidParamsError(message="the push notification config needs a 'url'")
    if config.HasField("authentication"):
        raise InvalidParamsError(
            message="push 'authentication' is not offered: pushes are signed (X-Webhook-Signature) "
            "and carry the config's 'token' as X-A2A-Notification-Token"
        )
    return Webhook(config.url, config.token or None, A2A_FORMAT).to_json()


def config_of(ref: TaskRef, shown: dict[str, Any]) -> pb.TaskPushNotificationConfig:
    """A task's push config as the run resource shows its webhook (the token is not shown)."""
    return pb.TaskPushNotificationConfig(id=CONFIG_ID, task_id=ref.task_id, url=str(shown.get("url") or ""))


def push_renderer(
    read_task: Callable[[Any, TaskRef], Awaitable[pb.Task]],
) -> Callable[[Any, EndedRun], Awaitable[Rendered]]:
    """The `a2a` format: the ended run read as its task (`read_task(client, ref)`)."""

    async def render(client: Any, run: EndedRun) -> Rendered:
        ref = TaskRef(run.agent, run.session_id, run.correlation_id)
        current = await read_task(client, ref)
        body = MessageToJson(pb.StreamResponse(task=current), indent=None).encode()
        return Rendered(body, {TOKEN_HEADER: run.token} if run.token else {})

    return render
