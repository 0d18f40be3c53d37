"""HTTP routes of the review workflow: start an instance, read its status, send the approval."""

from __future__ import annotations

from typing import Any

import azure.functions as func
from pydantic import ValidationError

from ._errors import ProblemCode, ProblemError
from ._http import ApiSettings
from ._models import WorkflowApprovalBody, WorkflowListBody, WorkflowStartBody, WorkflowStatusBody
from ._problems import json_response, validation_problem
from ._requests import check_id, parse_json_object
from ._workflow import APPROVAL_EVENT, WORKFLOW_NAME

_FINISHED = {"Completed", "Failed", "Terminated", "Canceled"}
LIST_LIMIT = 50
"""Most instances `GET workflows/review` lists (the newest)."""


def _status_value(status: Any) -> str | None:
    runtime = getattr(status, "runtime_status", None)
    return None if runtime is None else str(getattr(runtime, "value", runtime))


def _iso(value: Any) -> str | None:
    return None if value is None else value.isoformat()


class WorkflowApi:
    """Handlers of `/api/workflows/review...`."""

    def __init__(self, settings: ApiSettings) -> None:
        self.settings = settings

    def _location(self, instance_id: str) -> str:
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

    def _body(self, instance_id: str, status: Any) -> WorkflowStatusBody:
        return WorkflowStatusBody(
            instance_id=instance_id,
            runtime_status=_status_value(status),
            custom_status=status.custom_status,
            output=status.output,
            created_time=_iso(status.created_time),
            last_updated_time=_iso(status.last_updated_time),
            location=self._location(instance_id),
        )

    async def start_or_list(self, req: func.HttpRequest, client: Any) -> func.HttpResponse:
        """POST (start) or GET (list) workflows/review"""
        if req.method.upper() == "GET":
            return await self.list(req, client)
        return await self.start(req, client)

    async def list(self, req: func.HttpRequest, client: Any) -> func.HttpResponse:
        """GET workflows/review: the newest review workflow instances (at most `LIST_LIMIT`)."""
        statuses = [
            s
            for s in await client.get_status_all()
            if getattr(s, "name", None) == WORKFLOW_NAME and getattr(s, "instance_id", None)
        ]
        statuses.sort(key=lambda s: _iso(s.created_time) or "", reverse=True)
        body = WorkflowListBody(instances=[self._body(s.instance_id, s) for s in statuses[:LIST_LIMIT]])
        return json_response(body)

    async def start(self, req: func.HttpRequest, client: Any) -> func.HttpResponse:
        """POST workflows/review"""
        raw = parse_json_object(req, self.settings.max_body_bytes)
        try:
            body = WorkflowStartBody.model_validate(raw)
        except ValidationError as error:
            raise validation_problem(error) from error
        instance_id = await client.start_new(WORKFLOW_NAME, None, body.model_dump(mode="json"))
        location = self._location(instance_id)
        payload = WorkflowStatusBody(instance_id=instance_id, runtime_status="Pending", location=location)
        return json_response(payload, 202, {"Location": location, "Retry-After": "1"})

    async def status(self, req: func.HttpRequest, client: Any) -> func.HttpResponse:
        """GET workflows/review/{instance_id}"""
        instance_id = check_id(
            req.route_params.get("instance_id", ""), "instance_id", ProblemCode.INVALID_INSTANCE_ID
        )
        status = await self._status(client, instance_id)
        return json_response(self._body(instance_id, status))

    async def approve(self, req: func.HttpRequest, client: Any) -> func.HttpResponse:
        """POST workflows/review/{instance_id}/approval"""
        instance_id = check_id(
            req.route_params.get("instance_id", ""), "instance_id", ProblemCode.INVALID_INSTANCE_ID
        )
        raw = parse_json_object(req, self.settings.max_body_bytes)
        try:
            body = WorkflowApprovalBody.model_validate(raw)
        except ValidationError as error:
            raise validation_problem(error) from error
        status = await self._status(client, instance_id)
        runtime = _status_value(status)
        if runtime in _FINISHED:
            raise ProblemError(
                ProblemCode.WORKFLOW_FINISHED,
                f"review workflow {instance_id!r} is {runtime}; it no longer takes an approval",
                field="instance_id",
            )
        await client.raise_event(instance_id, APPROVAL_EVENT, body.model_dump(mode="json"))
        location = self._location(instance_id)
        payload = WorkflowStatusBody(instance_id=instance_id, runtime_status=runtime, location=location)
        return json_response(payload, 202, {"Location": location})
