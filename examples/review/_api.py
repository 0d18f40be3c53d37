"""HTTP routes of the review workflow: start an instance, read its status, send the approval.

The routes are route-table entries like the agent routes (`hosting.RouteSpec`), so `build_app`
registers them and documents them in the OpenAPI document with the same code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import azure.functions as func
from azure.durable_functions import OrchestrationRuntimeStatus
from azure.durable_functions.models.DurableOrchestrationStatus import DurableOrchestrationStatus
from pydantic import BaseModel, ConfigDict, Field

from hosting import (
    BAD_REQUEST,
    UNAVAILABLE,
    ApiSettings,
    Handler,
    Operation,
    ProblemCode,
    ProblemError,
    RouteResponse,
    RouteSpec,
    WholeNumber,
    check_id,
    json_response,
    parse_body,
    with_trace_context,
)
from hosting.client import query_instances

from ._workflow import APPROVAL_EVENT, INSTANCE_PREFIX, WORKFLOW_NAME, new_instance_id

JSON = Any

_FINISHED = {
    status.value
    for status in (
        OrchestrationRuntimeStatus.Completed,
        OrchestrationRuntimeStatus.Failed,
        OrchestrationRuntimeStatus.Terminated,
        OrchestrationRuntimeStatus.Canceled,
    )
}


class _Body(BaseModel):
    # Strict and closed, like the agent routes' bodies: a misspelt field is a 400.
    model_config = ConfigDict(extra="forbid", strict=True)


class WorkflowStartBody(_Body):
    """Body of `POST /api/workflows/review`: what to write and how patient to be."""

    topic: str = Field(min_length=1, max_length=2000)
    max_rounds: WholeNumber = Field(default=3, ge=1, le=10)
    approval_timeout_seconds: WholeNumber = Field(default=86_400, ge=1, le=7 * 86_400)


class WorkflowApprovalBody(_Body):
    """Body of `POST /api/workflows/review/{instance_id}/approval`: a human's decision."""

    approved: bool
    comment: str | None = Field(default=None, max_length=4000)


class WorkflowStatusBody(BaseModel):
    """A review workflow instance as seen by clients."""

    instance_id: str
    runtime_status: str | None
    custom_status: JSON = None
    output: JSON = None
    created_time: str | None = None
    last_updated_time: str | None = None
    location: str | None = None


class WorkflowListBody(BaseModel):
    """Answer of `GET /api/workflows/review`: the most recent instances, newest first."""

    instances: list[WorkflowStatusBody]


LIST_LIMIT = 50
"""Most instances `GET workflows/review` lists (the newest)."""
_QUERY_PAGE = 100


def _status_value(status: Any) -> str | None:
    runtime = getattr(status, "runtime_status", None)
    return None if runtime is None else str(getattr(runtime, "value", runtime))


def _iso(value: Any) -> str | None:
    return None if value is None else value.isoformat()


class WorkflowApi:
    """Handlers of `/api/workflows/review...`."""

    def __init__(self, settings: ApiSettings) -> None:
        self.settings = settings

    def handlers(self) -> Mapping[str, Handler]:
        """The handler of each route in `ROUTES`, by function name."""
        return {
            "workflow_review_start": self.start_or_list,
            "workflow_review_status": self.status,
            "workflow_review_approval": self.approve,
        }

    def _location(self, req: func.HttpRequest, instance_id: str) -> str:
        return self.settings.url(f"workflows/review/{instance_id}")

    async def _status(self, client: Any, instance_id: str) -> Any:
        status = await client.get_status(instance_id)
        if not status or getattr(status, "instance_id", None) is None or _status_value(status) is None:
            raise ProblemError(
                ProblemCode.WORKFLOW_NOT_FOUND,
                f"there is no review workflow {instance_id!r}",
                field="instance_id",
            )
        if getattr(status, "name", WORKFLOW_NAME) not in (None, WORKFLOW_NAME):
            raise ProblemError(
                ProblemCode.WORKFLOW_NOT_FOUND,
                f"{instance_id!r} is not a review workflow",
                field="instance_id",
            )
        return status

    def _body(self, req: func.HttpRequest, instance_id: str, status: Any) -> WorkflowStatusBody:
        return WorkflowStatusBody(
            instance_id=instance_id,
            runtime_status=_status_value(status),
            custom_status=status.custom_status,
            output=status.output,
            created_time=_iso(status.created_time),
            last_updated_time=_iso(status.last_updated_time),
            location=self._location(req, instance_id),
        )

    async def start_or_list(self, req: func.HttpRequest, client: Any) -> func.HttpResponse:
        """POST (start) or GET (list) workflows/review"""
        if req.method.upper() == "GET":
            return await self.list(req, client)
        return await self.start(req, client)

    async def list(self, req: func.HttpRequest, client: Any) -> func.HttpResponse:
        """GET workflows/review: the newest review workflow instances (at most `LIST_LIMIT`).

        Through the instance query by id prefix (`review-`), paged to the end: the instances of
        the task hub at large (entity rows and the sessions' expiry checks on Azure Storage) are
        never read, so however many there are, every review instance is found."""
        found: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            page, token = await query_instances(client, INSTANCE_PREFIX, top=_QUERY_PAGE, continuation=token)
            found += [s for s in page if s.get("name") == WORKFLOW_NAME and s.get("instanceId")]
            if not token:
                break
        found.sort(key=lambda s: str(s.get("createdTime") or ""), reverse=True)
        statuses = [DurableOrchestrationStatus.from_json(s) for s in found[:LIST_LIMIT]]
        body = WorkflowListBody(instances=[self._body(req, s.instance_id, s) for s in statuses])
        return json_response(body)

    async def start(self, req: func.HttpRequest, client: Any) -> func.HttpResponse:
        """POST workflows/review"""
        body = parse_body(req, WorkflowStartBody, self.settings)
        # The trace context in the input: the workflow's turns join this request's trace.
        orchestration_input = with_trace_context(body.model_dump(mode="json"))
        instance_id = await client.start_new(WORKFLOW_NAME, new_instance_id(), orchestration_input)
        location = self._location(req, instance_id)
        payload = WorkflowStatusBody(instance_id=instance_id, runtime_status="Pending", location=location)
        return json_response(payload, 202, {"Location": location, "Retry-After": "1"})

    async def status(self, req: func.HttpRequest, client: Any) -> func.HttpResponse:
        """GET workflows/review/{instance_id}"""
        instance_id = check_id(
            req.route_params.get("instance_id", ""), "instance_id", ProblemCode.INVALID_INSTANCE_ID
        )
        status = await self._status(client, instance_id)
        return json_response(self._body(req, instance_id, status))

    async def approve(self, req: func.HttpRequest, client: Any) -> func.HttpResponse:
        """POST workflows/review/{instance_id}/approval"""
        instance_id = check_id(
            req.route_params.get("instance_id", ""), "instance_id", ProblemCode.INVALID_INSTANCE_ID
        )
        body = parse_body(req, WorkflowApprovalBody, self.settings)
        status = await self._status(client, instance_id)
        runtime = _status_value(status)
        if runtime in _FINISHED:
            raise ProblemError(
                ProblemCode.WORKFLOW_FINISHED,
                f"review workflow {instance_id!r} is {runtime}; it no longer takes an approval",
                field="instance_id",
            )
        await client.raise_event(instance_id, APPROVAL_EVENT, body.model_dump(mode="json"))
        location = self._location(req, instance_id)
        payload = WorkflowStatusBody(instance_id=instance_id, runtime_status=runtime, location=location)
        return json_response(payload, 202, {"Location": location})


ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec(
        "workflow_review_start",
        "workflows/review",
        (
            Operation(
                "GET",
                "The newest review workflow instances (at most 50), with stage and status.",
                (RouteResponse(200, "Instances, newest first.", WorkflowListBody), UNAVAILABLE),
            ),
            Operation(
                "POST",
                "Start a review workflow: writer drafts, reviewer critiques, a human approves.",
                (
                    RouteResponse(202, "Started; poll the `Location`.", WorkflowStatusBody),
                    BAD_REQUEST,
                    UNAVAILABLE,
                ),
                request=WorkflowStartBody,
            ),
        ),
        group="workflows",
    ),
    RouteSpec(
        "workflow_review_status",
        "workflows/review/{instance_id}",
        (
            Operation(
                "GET",
                "A review workflow's status, stage (custom status) and output.",
                (
                    RouteResponse(200, "The workflow.", WorkflowStatusBody),
                    BAD_REQUEST,
                    RouteResponse(404, "Unknown."),
                    UNAVAILABLE,
                ),
            ),
        ),
        group="workflows",
    ),
    RouteSpec(
        "workflow_review_approval",
        "workflows/review/{instance_id}/approval",
        (
            Operation(
                "POST",
                "Send a human's approval (or rejection) to a waiting review workflow.",
                (
                    RouteResponse(202, "Delivered.", WorkflowStatusBody),
                    BAD_REQUEST,
                    RouteResponse(404, "Unknown workflow."),
                    RouteResponse(409, "The workflow has already finished."),
                    UNAVAILABLE,
                ),
                request=WorkflowApprovalBody,
            ),
        ),
        group="workflows",
    ),
)
"""The review workflow's HTTP functions (route-table entries, documented in the OpenAPI document)."""
