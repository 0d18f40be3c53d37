"""Rendering errors as `application/problem+json` responses, and JSON responses in general."""

from __future__ import annotations

import json
from typing import Any

import azure.functions as func
from pydantic import BaseModel, ValidationError

from .._errors import ProblemCode, ProblemError
from .._ids import id_problem

PROBLEM_TYPE_BASE = "urn:durable-agents:problem:"
"""Problem `type` URIs are this base plus the stable `code`."""


def json_response(
    body: BaseModel | dict[str, Any],
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> func.HttpResponse:
    """A JSON response; pydantic bodies are dumped without their unset optional noise."""
    data = body.model_dump(mode="json", exclude_none=False) if isinstance(body, BaseModel) else body
    return func.HttpResponse(
        json.dumps(data, ensure_ascii=False),
        status_code=status,
        headers=headers,
        mimetype="application/json",
        charset="utf-8",
    )


def problem_body(error: ProblemError) -> dict[str, Any]:
    """The problem document of `error` (RFC 9457, with our `code`, `field` and extensions)."""
    body: dict[str, Any] = {
        "type": PROBLEM_TYPE_BASE + error.code,
        "title": error.title,
        "status": error.status,
        "detail": error.detail,
        "code": error.code,
    }
    if error.field is not None:
        body["field"] = error.field
    body.update(error.extensions)
    return body


def problem_response(error: ProblemError) -> func.HttpResponse:
    """The problem document of `error`, with its status code and headers."""
    return func.HttpResponse(
        json.dumps(problem_body(error), ensure_ascii=False),
        status_code=error.status,
        headers=error.headers,
        mimetype="application/problem+json",
        charset="utf-8",
    )


def _field_of(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "body"


_ID_FIELDS = {
    "session_id": ProblemCode.INVALID_SESSION_ID,
    "thread_id": ProblemCode.INVALID_SESSION_ID,
    "correlation_id": ProblemCode.INVALID_CORRELATION_ID,
}
"""Body fields holding ids, and the code a bad one gets (as in a path or query)."""


def validation_problem(error: ValidationError) -> ProblemError:
    """A 400 problem naming the first invalid field of a pydantic validation error.

    Every error is listed in `errors` so a client can fix them all in one go.
    """
    details = error.errors(include_url=False, include_context=False, include_input=False)
    first = details[0]
    field = _field_of(first["loc"])
    kind = first["type"]
    id_code = _ID_FIELDS.get(str(first["loc"][-1])) if first["loc"] else None
    if id_code is not None:
        # An id in a body is told what is wrong with it in the words the path and query use,
        # not with the pattern that checks it.
        value = error.errors(include_url=False, include_context=False)[0].get("input")
        reason = id_problem(value) if isinstance(value, str) else None
        code, message = id_code, f"'{field}' {reason}" if reason else f"'{field}': {first['msg']}"
        details = [{**details[0], "msg": message}, *details[1:]]
    elif kind == "missing":
        code, message = ProblemCode.MISSING_FIELD, f"'{field}' is required"
    elif kind == "extra_forbidden":
        code, message = ProblemCode.UNKNOWN_FIELD, f"'{field}' is not a known field"
    elif kind in ("string_too_short", "value_error") and first["loc"][-1:] in (("message",), ("text",)):
        code, message = ProblemCode.EMPTY_MESSAGE, f"'{field}' must not be empty"
    elif kind.endswith("_type") or kind in ("literal_error", "enum"):
        code, message = ProblemCode.INVALID_TYPE, f"'{field}': {first['msg']}"
    else:
        code, message = ProblemCode.INVALID_FIELD, f"'{field}': {first['msg']}"
    return ProblemError(
        code,
        message,
        field=field,
        errors=[{"field": _field_of(d["loc"]), "message": d["msg"]} for d in details],
    )
