"""Erasing a user: `DELETE users/{user_id}` (and `DELETE me`) starts the durable erasure of
everything kept for them (hosting.lifecycle._erasure) and answers 202 with the `Location` of its
receipt, `GET users/{user_id}/erasure` (and `me/erasure`). The caller rules are those of the other
user routes (hosting.http._users).

One erasure per user: its instance id is derived from the user (`dafx-erase-{user}`), so a
DELETE while one is pending or running attaches to it (the same 202), and a DELETE after it
finished starts a new one (which replaces the old receipt: the Durable extension lets a new
instance take the id of a finished one)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import azure.functions as func

from .._errors import ProblemCode, ProblemError
from .._settings import ApiSettings
from ..lifecycle import ERASURE, erasure_instance
from ._memories import route_user
from ._models import ErasureBody
from ._problems import json_response
from ._users import USER_ID

_UNDER_WAY = ("Pending", "Running", "ContinuedAsNew", "Suspended")
_STATUS_OF = {"Completed": "completed", "Failed": "failed", "Terminated": "failed", "Canceled": "failed"}


def _runtime(status: Any) -> str | None:
    runtime = getattr(status, "runtime_status", None)
    return None if runtime is None else str(getattr(runtime, "value", runtime))


class UserErasure:
    """The handlers of the erasure routes; `agents`: the names of the hosted agents (whose
    sessions an erasure walks)."""

    def __init__(self, agents: Sequence[str], settings: ApiSettings) -> None:
        self.agents = list(agents)
        self.settings = settings

    def _location(self, req: func.HttpRequest, user: str) -> str:
        if USER_ID in req.route_params:
            return self.settings.url(f"users/{user}/erasure")
        # `me/erasure` serves whoever asks; a function-key caller names the user again there.
        suffix = f"?{USER_ID}={user}" if req.params.get(USER_ID) is not None else ""
        return self.settings.url(f"me/erasure{suffix}")

    async def erase(self, req: func.HttpRequest, client: Any) -> func.HttpResponse:
        """DELETE users/{user_id}, me: 202, the erasure started or the one under way."""
        user = route_user(req)
        instance = erasure_instance(user)
        status = await client.get_status(instance)
        if _runtime(status) not in _UNDER_WAY:
            try:
                await client.start_new(ERASURE, instance, {"user": user, "agents": self.agents})
            except Exception:  # started by a request racing this one: attach to it
                status = await client.get_status(instance)
                if _runtime(status) not in _UNDER_WAY:
                    raise
            status = None  # the receipt of a finished erasure is not this one's
        location = self._location(req, user)
        body = self._body(user, status, location) if status is not None else ErasureBody(
            user_id=user, status="running", sessions={a: 0 for a in self.agents}, location=location
        )
        return json_response(body, 202, {"Location": location, "Retry-After": "1"})

    async def status(self, req: func.HttpRequest, client: Any) -> func.HttpResponse:
        """GET users/{user_id}/erasure, me/erasure: the receipt (200), 404 `erasure_not_found`."""
        user = route_user(req)
        status = await client.get_status(erasure_instance(user))
        if _runtime(status) is None or getattr(status, "name", ERASURE) not in (None, ERASURE):
            raise ProblemError(
                ProblemCode.ERASURE_NOT_FOUND, f"no erasure of {user!r} was asked for", field=USER_ID
            )
        body = self._body(user, status, self._location(req, user))
        headers = {"Retry-After": "1"} if body.status == "running" else None
        return json_response(body, 200, headers)

    @staticmethod
    def _body(user: str, status: Any, location: str) -> ErasureBody:
        runtime = _runtime(status)
        receipt = status.output if runtime == "Completed" else status.custom_status
        fields = dict(receipt) if isinstance(receipt, dict) else {}
        fields.update(user_id=user, status=_STATUS_OF.get(runtime or "", "running"), location=location)
        if fields.get("started_at") is None and getattr(status, "created_time", None) is not None:
            fields["started_at"] = status.created_time.isoformat()
        return ErasureBody.model_validate(fields)
