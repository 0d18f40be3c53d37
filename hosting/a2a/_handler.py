"""The A2A request handler (the SDK's `RequestHandler`, which its JSON-RPC dispatcher calls for
1.0 and, through its 0.3 adapter, for 0.3 methods): each method converts its request into typed
values for the product's own API (`Api.submit_run` with a `run_call`, `Api.decide`, `Api.cancel`)
and the run's outcome and events into the A2A task; nothing else."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import azure.functions as func
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import (
    ExtendedAgentCardNotConfiguredError,
    InternalError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict

from .._errors import ProblemError
from .._ids import idempotency_key_problem
from ..client import Answerable, Awaiting, DurableClient, Finished
from ..http import (
    Api,
    RunAccepted,
    RunArgs,
    RunStreamed,
    RunSubmitted,
    SseEvent,
    StreamEnded,
    approval_decision,
    caller_user,
    run_call,
)
from ..lifecycle import start_approval_expiry
from ..stored import INTERNAL, Approval, RunApprovals, Viewer
from ..streams import TERMINAL_TYPES
from ..webhooks import Webhook, WebhookRefused, cancel_delivery, check_webhook, delivery_of, start_delivery
from ._push import CONFIG_ID, config_of, push_enabled, webhook_of
from ._tasks import (
    ANSWER_ARTIFACT,
    TERMINAL,
    TaskRef,
    approvals_message,
    decode_task_id,
    finished_task,
    task,
    text_part,
)

log = logging.getLogger("hosting.a2a")

HTTP_KEY = "durable_agents.http"
CLIENT_KEY = "durable_agents.client"
AGENT_KEY = "durable_agents.agent"
_APPROVE_WORDS = {
    "approve": True,
    "approved": True,
    "yes": True,
    "reject": False,
    "rejected": False,
    "no": False,
}


def _problem(problem: ProblemError) -> Exception:
    """The product's refusal as the protocol's error: an unknown (or another user's) session or
    run is TaskNotFound, a bad field InvalidParams."""
    if problem.status == 404:
        return TaskNotFoundError(message=problem.detail)
    if problem.status in (400, 409, 413, 422):
        return InvalidParamsError(message=f"{problem.code}: {problem.detail}")
    return InternalError(message=f"{problem.code}: {problem.detail}")


def _texts(message: pb.Message) -> str:
    return "\n".join(p.text for p in message.parts if p.WhichOneof("content") == "text")


def _decisions(message: pb.Message, waiting: list[Approval]) -> list[dict[str, Any]]:
    """The decisions a message carries: a data part `{"approvals": [{"id", "approved", "reason"?}]}`,
    or the text "approve" / "reject" for every waiting call."""
    out: list[dict[str, Any]] = []
    for part in message.parts:
        if part.WhichOneof("content") != "data":
            continue
        data = MessageToDict(part.data)
        items = data.get("approvals") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise InvalidParamsError(
                message='a data part must be {"approvals": [{"id": ..., "approved": ...}]}'
            )
        for item in items:
            if (
                not isinstance(item, dict)
                or not isinstance(item.get("id"), str)
                or not isinstance(item.get("approved"), bool)
            ):
                raise InvalidParamsError(message="each approval needs a string 'id' and a boolean 'approved'")
            decision = {"call_id": item["id"], "approved": item["approved"]}
            if isinstance(item.get("reason"), str):
                decision["reason"] = item["reason"]
            out.append(decision)
    if not out:
        word = _texts(message).strip().lower().rstrip(".!")
        if word in _APPROVE_WORDS:
            out = [{"call_id": a.call_id, "approved": _APPROVE_WORDS[word]} for a in waiting]
    if not out:
        ids = ", ".join(a.call_id for a in waiting)
        raise InvalidParamsError(
            message=f"the task awaits decisions on the tool calls {ids}: send a data part "
            '{"approvals": [{"id": ..., "approved": true|false}]} or the text "approve" or "reject"'
        )
    return out


class A2aHandler(RequestHandler):
    """The SDK's request handler, bound to the product's API; the HTTP request, its durable
    client and the agent are the call context's (hosting.a2a._api sets them)."""

    def __init__(self, api: Api) -> None:
        self.api = api

    # -- helpers ------------------------------------------------------------------------------

    @staticmethod
    def _call(context: ServerCallContext | None) -> tuple[func.HttpRequest, DurableClient, str]:
        assert context is not None
        return context.state[HTTP_KEY], context.state[CLIENT_KEY], context.state[AGENT_KEY]

    def _ref(self, agent: str, task_id: str) -> TaskRef:
        ref = decode_task_id(agent, task_id)
        if ref is None:
            raise TaskNotFoundError(message=f"no task {task_id!r}")
        return ref

    async def _outcome(self, client: DurableClient, ref: TaskRef, user: Viewer, timeout: float) -> Answerable:
        try:
            return await self.api.run_outcome(
                client, ref.agent, ref.session_id, ref.correlation_id, user, timeout
            )
        except ProblemError as problem:
            raise _problem(problem) from None

    async def _known(self, client: DurableClient, ref: TaskRef, user: Viewer) -> None:
        """TaskNotFound unless the run is one the caller may see (Api.run_known)."""
        if not await self.api.run_known(client, ref.agent, ref.session_id, ref.correlation_id, user):
            raise TaskNotFoundError(message=f"no task {ref.task_id!r}")

    async def _task(self, client: DurableClient, ref: TaskRef, user: Viewer, timeout: float) -> pb.Task:
        outcome = await self._outcome(client, ref, user, timeout)
        if isinstance(outcome, Finished):
            return finished_task(ref, outcome.run.result())
        await self._known(client, ref, user)
        match outcome:
            case Awaiting(approvals=paused) if paused.waiting:
                return task(ref, pb.TASK_STATE_INPUT_REQUIRED, approvals_message(ref, paused))
            case _:
                return task(ref, pb.TASK_STATE_WORKING)

    async def ended_task(self, client: DurableClient, ref: TaskRef) -> pb.Task:
        """An ended run's task, for its push (a run that ended without an answer, discarded by a
        reset or expiry, is a failed task)."""
        try:
            return await self._task(client, ref, INTERNAL, 0)
        except (TaskNotFoundError, UnsupportedOperationError, InvalidParamsError):
            message = pb.Message(
                message_id=f"{ref.correlation_id}-ended", role=pb.ROLE_AGENT,
                parts=[text_part("the run ended without an answer (its session was reset or expired)")],
            )  # fmt: skip
            return task(ref, pb.TASK_STATE_FAILED, message)

    async def _submit(
        self, params: pb.SendMessageRequest, context: ServerCallContext | None, stream: bool
    ) -> tuple[TaskRef, RunSubmitted | None, Viewer]:
        """Send the message as a turn (or as decisions on the task it continues): the run, what
        submitting it came to (None for decisions) and the caller."""
        req, client, agent = self._call(context)
        message = params.message
        if not params.HasField("message") or not message.message_id:
            raise InvalidParamsError(message="'message.messageId' is required")
        bad_id = idempotency_key_problem(message.message_id)
        if bad_id is not None:
            raise InvalidParamsError(message=f"'message.messageId' {bad_id}")
        user = caller_user(req)
        if message.task_id:
            ref = self._ref(agent, message.task_id)
            if message.context_id and message.context_id != ref.session_id:
                raise InvalidParamsError(message="'message.contextId' is not the task's context")
            await self._decide(client, ref, user, message)
            return ref, None, user
        text = _texts(message)
        if not text.strip():
            raise InvalidParamsError(message="the message has no text part (or only empty text)")
        config = params.configuration
        pushed = config.HasField("task_push_notification_config")
        push = config.task_push_notification_config if pushed else None
        args = RunArgs(
            message=text,
            session_id=message.context_id or None,
            idempotency_key=message.message_id,
            user_id=user,
            wait=not (stream or config.return_immediately),
            event_stream=stream,
            webhook=None if push is None else Webhook.from_json(webhook_of(push)),
        )
        try:
            submitted = await self.api.submit_run(client, self.api.agents[agent], run_call(agent, args))
        except ProblemError as problem:  # refused: nothing was sent
            raise _problem(problem) from None
        # Answered, accepted or streamed: the task is read from the run (a failed turn is a
        # failed task).
        return TaskRef(agent, submitted.session_id, submitted.correlation_id), submitted, user

    async def _decide(self, client: DurableClient, ref: TaskRef, user: Viewer, message: pb.Message) -> None:
        outcome = await self._outcome(client, ref, user, 0)
        if isinstance(outcome, Finished):
            raise UnsupportedOperationError(
                message=f"task {ref.task_id!r} is finished; send a new message without taskId"
            )
        await self._known(client, ref, user)
        waiting = outcome.approvals.waiting if isinstance(outcome, Awaiting) else []
        if not waiting:
            raise UnsupportedOperationError(message=f"task {ref.task_id!r} is working and awaits no input")
        for decision in _decisions(message, waiting):
            try:
                await self.api.decide(
                    client, ref.agent, ref.session_id, ref.correlation_id, _user(user),
                    approval_decision(decision),
                )  # fmt: skip
            except ProblemError as problem:
                raise _problem(problem) from None

    # -- methods ------------------------------------------------------------------------------

    async def on_message_send(
        self, params: pb.SendMessageRequest, context: ServerCallContext | None = None
    ) -> pb.Task | pb.Message:
        ref, submitted, user = await self._submit(params, context, stream=False)
        _req, client, _agent = self._call(context)
        immediate = params.configuration.return_immediately
        wait = 0.0 if immediate or submitted is not None else self.api.settings.response_wait_seconds
        if immediate and isinstance(submitted, RunAccepted):
            return task(ref, pb.TASK_STATE_SUBMITTED)
        return await self._task(client, ref, user, wait)

    async def on_message_send_stream(
        self, params: pb.SendMessageRequest, context: ServerCallContext | None = None
    ) -> AsyncGenerator[Any, None]:
        ref, submitted, user = await self._submit(params, context, stream=True)
        _req, client, _agent = self._call(context)
        opened = None
        if isinstance(submitted, RunStreamed):
            try:
                opened = await self.api.opened_stream(client, submitted)
            except ProblemError as problem:
                raise _problem(problem) from None
        if opened is None or isinstance(opened, StreamEnded):  # a decision, a retry's failure
            current = await self._task(client, ref, user, 0)
            yield current
            if current.status.state not in TERMINAL:
                async for event in self._follow(client, ref, user):
                    yield event
            return
        yield task(ref, pb.TASK_STATE_WORKING)
        async for event in self._events(client, ref, self.api.streams.events(client, opened)):
            yield event

    async def _events(
        self, client: DurableClient, ref: TaskRef, events: AsyncGenerator[SseEvent, None]
    ) -> AsyncIterator[Any]:
        """The run's own events as A2A events: text deltas append to the answer artifact, a
        pause is `input-required`, the end the final status."""
        first = True
        async with contextlib.aclosing(events):
            async for event in events:
                kind, data = event.type, event.data
                if kind == "text.delta" and data.get("text"):
                    artifact = pb.Artifact(
                        artifact_id=ANSWER_ARTIFACT, name="answer", parts=[text_part(str(data["text"]))]
                    )
                    yield pb.TaskArtifactUpdateEvent(
                        task_id=ref.task_id, context_id=ref.session_id, artifact=artifact, append=not first
                    )
                    first = False
                elif kind == "approval.required":
                    paused = RunApprovals(
                        [Approval.from_public_json(a) for a in data.get("approvals") or []],
                        int(data.get("step", 0)),
                    )
                    await start_approval_expiry(client, ref.agent, ref.session_id, ref.correlation_id, paused)
                    yield _status(
                        ref, task(ref, pb.TASK_STATE_INPUT_REQUIRED, approvals_message(ref, paused))
                    )
                    return
                elif kind in TERMINAL_TYPES:
                    break
        yield _status(ref, await self._task(client, ref, INTERNAL, 0))

    async def _follow(self, client: DurableClient, ref: TaskRef, user: Viewer) -> AsyncIterator[Any]:
        """Status updates of a run until it ends or waits for input (the run route's own wait)."""
        seen = None
        while True:
            current = await self._task(client, ref, user, self.api.settings.response_wait_seconds)
            state = current.status.state
            if state != seen:
                yield _status(ref, current)
                seen = state
            if state in TERMINAL or state == pb.TASK_STATE_INPUT_REQUIRED:
                return

    async def on_get_task(
        self, params: pb.GetTaskRequest, context: ServerCallContext | None = None
    ) -> pb.Task | None:
        req, client, agent = self._call(context)
        return await self._task(client, self._ref(agent, params.id), caller_user(req), 0)

    async def on_cancel_task(
        self, params: pb.CancelTaskRequest, context: ServerCallContext | None = None
    ) -> pb.Task | None:
        req, client, agent = self._call(context)
        ref = self._ref(agent, params.id)
        user = caller_user(req)
        current = await self._task(client, ref, user, 0)  # another user's task is not found
        if current.status.state in TERMINAL:
            raise TaskNotCancelableError(message=f"task {ref.task_id!r} is finished")
        try:
            await self.api.cancel(client, ref.agent, ref.session_id, ref.correlation_id, _user(user))
        except ProblemError as problem:
            if problem.status == 409:
                raise TaskNotCancelableError(message=problem.detail) from None
            raise _problem(problem) from None
        return await self._task(client, ref, user, self.api.settings.response_wait_seconds)

    async def on_subscribe_to_task(
        self, params: pb.SubscribeToTaskRequest, context: ServerCallContext | None = None
    ) -> AsyncGenerator[Any, None]:
        req, client, agent = self._call(context)
        ref = self._ref(agent, params.id)
        user = caller_user(req)
        current = await self._task(client, ref, user, 0)
        if current.status.state in TERMINAL:
            raise UnsupportedOperationError(message=f"task {ref.task_id!r} is finished; get it instead")
        yield current
        async for event in self._follow(client, ref, user):
            yield event

    async def on_list_tasks(
        self, params: pb.ListTasksRequest, context: ServerCallContext | None = None
    ) -> Any:
        raise UnsupportedOperationError(
            message="ListTasks is not offered; list a context's runs on the run route"
        )

    async def on_create_task_push_notification_config(
        self, params: pb.TaskPushNotificationConfig, context: ServerCallContext | None = None
    ) -> pb.TaskPushNotificationConfig:
        """The task's run gets the webhook now: pushed when it ends (at once if it has)."""
        webhook = Webhook.from_json(webhook_of(params))  # PushNotificationNotSupported when off
        req, client, agent = self._call(context)
        ref = self._ref(agent, params.task_id)
        user = caller_user(req)
        await self._task(client, ref, user, 0)  # TaskNotFound for an unknown or another user's task
        try:
            check_webhook(webhook)
        except WebhookRefused as refused:
            raise InvalidParamsError(message=f"'url': {refused}") from None
        owner = user if isinstance(user, str) else None
        await start_delivery(client, ref.agent, ref.session_id, ref.correlation_id, owner, webhook)
        return pb.TaskPushNotificationConfig(id=CONFIG_ID, task_id=ref.task_id, url=webhook.url)

    async def _push_config(
        self, task_id: str, context: ServerCallContext | None
    ) -> tuple[TaskRef, DurableClient, pb.TaskPushNotificationConfig | None]:
        if not push_enabled():
            raise PushNotificationNotSupportedError()
        req, client, agent = self._call(context)
        ref = self._ref(agent, task_id)
        await self._task(client, ref, caller_user(req), 0)
        shown = await delivery_of(client, ref.agent, ref.session_id, ref.correlation_id)
        return ref, client, None if shown is None else config_of(ref, shown)

    async def on_get_task_push_notification_config(
        self, params: pb.GetTaskPushNotificationConfigRequest, context: ServerCallContext | None = None
    ) -> pb.TaskPushNotificationConfig:
        _, _, config = await self._push_config(params.task_id, context)
        if config is None or (params.id and params.id != config.id):
            raise TaskNotFoundError(message=f"task {params.task_id!r} has no push config {params.id!r}")
        return config

    async def on_list_task_push_notification_configs(
        self, params: pb.ListTaskPushNotificationConfigsRequest, context: ServerCallContext | None = None
    ) -> pb.ListTaskPushNotificationConfigsResponse:
        _, _, config = await self._push_config(params.task_id, context)
        return pb.ListTaskPushNotificationConfigsResponse(configs=[] if config is None else [config])

    async def on_delete_task_push_notification_config(
        self, params: pb.DeleteTaskPushNotificationConfigRequest, context: ServerCallContext | None = None
    ) -> None:
        ref, client, config = await self._push_config(params.task_id, context)
        if config is None or (params.id and params.id != config.id):
            raise TaskNotFoundError(message=f"task {params.task_id!r} has no push config {params.id!r}")
        await cancel_delivery(client, ref.agent, ref.session_id, ref.correlation_id)

    async def on_get_extended_agent_card(self, params: Any, context: ServerCallContext | None = None) -> Any:
        raise ExtendedAgentCardNotConfiguredError()


def _user(user: Viewer) -> str | None:
    """The user a caller acts for (`caller_user` names one or no one, never hosting itself)."""
    return user if isinstance(user, str) else None


def _status(ref: TaskRef, current: pb.Task) -> pb.TaskStatusUpdateEvent:
    return pb.TaskStatusUpdateEvent(task_id=ref.task_id, context_id=ref.session_id, status=current.status)
