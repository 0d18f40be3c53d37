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

The user routes (`users/{user_id}/...`) follow the same rule with the user in the path, and their
`me/...` twins serve the user the caller acts for, who must then be someone (`own_user`).
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
    principal = _principal(req)
    if named is not None and named != principal:
        raise ProblemError(
            ProblemCode.USER_MISMATCH,
            f"with App Service Authentication on, '{USER_ID}' may only name the signed-in user",
            field=USER_ID,
        )
    return principal


def _principal(req: func.HttpRequest) -> str | None:
    raw = req.headers.get(PRINCIPAL_ID_HEADER)
    return check_user_id(raw, PRINCIPAL_ID_HEADER) if raw else None


def named_user(req: func.HttpRequest) -> str:
    """The user a `users/{user_id}/...` route names: 400 `invalid_user_id` for a bad id, 400
    `conflicting_fields` when the `user_id` query parameter names another, and behind Easy Auth
    403 `user_mismatch` for anyone but the signed-in principal (the rule of `caller_user`: the
    answer depends on the two ids alone, so it tells nothing of the named user's data)."""
    user = check_user_id(req.route_params.get(USER_ID, ""))
    query_user = req.params.get(USER_ID)
    if query_user is not None and check_user_id(query_user) != user:
        raise ProblemError(
            ProblemCode.CONFLICTING_FIELDS,
            f"the path and the query parameter '{USER_ID}' name different users",
            field=USER_ID,
        )
    if easy_auth_enabled() and _principal(req) != user:
        raise ProblemError(
            ProblemCode.USER_MISMATCH,
            "with App Service Authentication on, a user route may only name the signed-in user",
            field=USER_ID,
        )
    return user


def own_user(req: func.HttpRequest) -> str:
    """The user a `me/...` route serves: the signed-in principal behind Easy Auth (401
    `not_signed_in` without one), else the `user_id` a function-key caller names (400
    `missing_field` without one)."""
    user = caller_user(req)
    if user is not None:
        return user
    if easy_auth_enabled():
        raise ProblemError(
            ProblemCode.NOT_SIGNED_IN,
            "no one is signed in: App Service Authentication passed the request without a principal",
            field=PRINCIPAL_ID_HEADER,
        )
    raise ProblemError(
        ProblemCode.MISSING_FIELD,
        f"without App Service Authentication, name the user with the query parameter '{USER_ID}'",
        field=USER_ID,
    )


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
