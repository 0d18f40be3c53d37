"""The Responses API's own error shape: `{"error": {"message", "type", "param", "code"}}` with
the HTTP status, which the `openai` SDK turns into `BadRequestError`, `NotFoundError` and so on.
The product's problems (hosting's `ProblemError`) are rendered in it, keeping their code."""

from __future__ import annotations

import azure.functions as func
from pydantic import BaseModel

from .._errors import ProblemError


class ResponsesErrorDetail(BaseModel):
    """What went wrong: `code` is stable (the product's problem code where it has one)."""

    message: str
    type: str
    param: str | None = None
    code: str | None = None


class ResponsesErrorBody(BaseModel):
    """An error of the Responses API routes, in that API's own shape."""

    error: ResponsesErrorDetail


class ResponsesError(Exception):
    """A request this edge refuses: the status and what the error body says."""

    def __init__(self, status: int, message: str, *, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code

    @classmethod
    def invalid(cls, param: str, message: str) -> ResponsesError:
        return cls(400, message, param=param, code="invalid_value")

    @classmethod
    def unsupported(cls, param: str, why: str) -> ResponsesError:
        return cls(400, f"'{param}' is not supported: {why}", param=param, code="unsupported_parameter")

    @classmethod
    def of_problem(cls, problem: ProblemError) -> ResponsesError:
        return cls(problem.status, problem.detail, param=problem.field, code=problem.code)


def error_type(status: int) -> str:
    """The error `type` the Responses API gives a status."""
    if status == 401:
        return "authentication_error"
    if status == 429:
        return "rate_limit_error"
    return "server_error" if status >= 500 else "invalid_request_error"


def error_response(error: ResponsesError, headers: dict[str, str] | None = None) -> func.HttpResponse:
    detail = ResponsesErrorDetail(
        message=error.message, type=error_type(error.status), param=error.param, code=error.code
    )
    return func.HttpResponse(
        ResponsesErrorBody(error=detail).model_dump_json(),
        status_code=error.status,
        mimetype="application/json",
        headers=headers,
    )
