"""Who the caller acts for: the user a request names, or the signed-in principal behind App
Service Authentication (Easy Auth).

Behind Easy Auth the platform authenticates the caller and hands the app the principal in
`X-MS-CLIENT-PRINCIPAL-ID` (its identity provider's id for the caller). Clients cannot set those
headers there ("External requests aren't allowed to set these headers, so they're present only
if set by App Service": learn.microsoft.com/azure/app-service/configure-authentication-user-identities),
so they are trusted only when the platform says authentication is on: the app setting
`WEBSITE_AUTH_ENABLED` that App Service sets to `True` (Microsoft.Identity.Web reads it the same
way, `AppServicesAuthenticationInformation.IsAppServicesAadAuthenticationEnabled`). Anywhere
else anybody could send them, so they are ignored.

Without Easy Auth the caller holds a function key, so it is a backend trusted to act for its own
users: it names one with `user_id` (JSON body, or the query parameter on any route). Behind Easy
Auth a `user_id` may only repeat the signed-in principal (403 `user_mismatch` otherwise).
"""

from __future__ import annotations

import os

import azure.functions as func

from .._errors import ProblemCode, ProblemError
from .._ids import id_problem

AUTH_ENABLED_SETTING = "WEBSITE_AUTH_ENABLED"
"""Set to `True` by App Service when its authentication (Easy Auth) is on."""
PRINCIPAL_ID_HEADER = "X-MS-CLIENT-PRINCIPAL-ID"
"""The signed-in principal's id, set by App Service Authentication."""
USER_ID = "user_id"
"""The body property and query parameter naming the user a caller with a function key acts for."""


def easy_auth_enabled() -> bool:
    """Whether App Service Authentication is on for this app (`WEBSITE_AUTH_ENABLED`)."""
    return os.environ.get(AUTH_ENABLED_SETTING, "").strip().lower() == "true"


def check_user_id(value: object, field: str = USER_ID) -> str:
    """`value` as a user id, or 400 `invalid_user_id` naming `field` (the id rule of sessions:
    user ids end up in stored documents, store keys and URLs)."""
    if not isinstance(value, str):
        raise ProblemError(ProblemCode.INVALID_USER_ID, f"'{field}' must be a string", field=field)
    problem = id_problem(value)
    if problem is not None:
        raise ProblemError(ProblemCode.INVALID_USER_ID, f"'{field}' {problem}", field=field)
    return value


def caller_user(req: func.HttpRequest, body_user: str | None = None) -> str | None:
    """The user the request acts for, or None (no one in particular).

    `body_user`: the JSON body's `user_id`, when the route has a body. It and the query parameter
    must agree when both are given (400 `conflicting_fields`)."""
    query_user = req.params.get(USER_ID)
    named = None
    if body_user is not None:
        named = check_user_id(body_user)
    if query_user is not None:
        checked = check_user_id(query_user)
        if named is not None and checked != named:
            raise ProblemError(
                ProblemCode.CONFLICTING_FIELDS,
                f"the body's '{USER_ID}' and the query parameter name different users",
                field=USER_ID,
            )
        named = checked
    if not easy_auth_enabled():
        return named
    raw = req.headers.get(PRINCIPAL_ID_HEADER)
    principal = check_user_id(raw, PRINCIPAL_ID_HEADER) if raw else None
    if named is not None and named != principal:
        raise ProblemError(
            ProblemCode.USER_MISMATCH,
            f"with App Service Authentication on, '{USER_ID}' may only name the signed-in user",
            field=USER_ID,
        )
    return principal


_CLAIM_USER = " user="


def claim_identity(request_hash: str, user: str | None) -> str:
    """The identity a run's claim in the stream store records: the request's hash and, for a
    caller acting for a user, that user (a pending run is joined only by a caller acting for the
    same user: before the session is stored there is no owner to check)."""
    return request_hash if user is None else f"{request_hash}{_CLAIM_USER}{user}"


def claimed_user(identity: str | None) -> tuple[str | None, str | None]:
    """(request hash, user) of a claim's identity (`claim_identity`)."""
    if identity is None or _CLAIM_USER not in identity:
        return identity, None
    request_hash, user = identity.split(_CLAIM_USER, 1)
    return request_hash, user
