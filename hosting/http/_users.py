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

A principal id is the identity provider's subject, which may hold characters the id rule refuses
(Auth0's `auth0|...`, `@`, `:`, `+`, `/`). Such an id, and one that starts with `~`, is stored as
`~` and 40 hex digits of a SHA-256 of the provider (`X-MS-CLIENT-PRINCIPAL-IDP`) and the id
(`stored_user_id`); any other principal keeps its id as is, so the data of principals already
stored stays theirs. Every `~` id is a digest, so no principal's own id can be another's stored
one. The original is not stored: the export names it from the request.

An MCP tool call carries every header of its HTTP request in its context
(`transport.properties.headers`), so the principal reaches it there (`principal_of`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

import azure.functions as func

from .._errors import ProblemCode, ProblemError
from .._ids import id_problem
from .._settings import current

PRINCIPAL_ID_HEADER = "X-MS-CLIENT-PRINCIPAL-ID"
"""The signed-in principal's id, set by App Service Authentication."""
PRINCIPAL_IDP_HEADER = "X-MS-CLIENT-PRINCIPAL-IDP"
"""The signed-in principal's identity provider (`aad`, `github`, an OpenID Connect provider's name)."""
MAPPED_USER_PREFIX = "~"
"""The first character of a user id made from a principal (`stored_user_id`), and of no other."""
USER_ID = "user_id"
"""The body property and query parameter naming the user a caller with a function key acts for."""


def easy_auth_enabled() -> bool:
    """Whether App Service Authentication is on for this app (`WEBSITE_AUTH_ENABLED`, as the app's
    settings were read at startup)."""
    return current().http.easy_auth


def check_user_id(value: object, field: str = USER_ID) -> str:
    """`value` as a user id, or 400 `invalid_user_id` naming `field` (the id rule of sessions:
    user ids end up in stored documents, store keys and URLs)."""
    if not isinstance(value, str):
        raise ProblemError(ProblemCode.INVALID_USER_ID, f"'{field}' must be a string", field=field)
    problem = id_problem(value)
    if problem is not None:
        raise ProblemError(ProblemCode.INVALID_USER_ID, f"'{field}' {problem}", field=field)
    return value


@dataclass(frozen=True)
class Principal:
    """The signed-in principal as App Service Authentication names it, and its stored user id."""

    provider: str
    id: str
    user_id: str

    def display(self) -> dict[str, str]:
        """The principal as the export shows it."""
        return {"provider": self.provider, "id": self.id}


def stored_user_id(provider: str, principal_id: str) -> str:
    """The user id a principal's data is stored under: its own id when that passes the id rule and
    does not start with `~`, else `~` and 40 hex digits of a SHA-256 of provider and id."""
    if id_problem(principal_id) is None and not principal_id.startswith(MAPPED_USER_PREFIX):
        return principal_id
    digest = hashlib.sha256("\x00".join(("principal", provider, principal_id)).encode()).hexdigest()
    return MAPPED_USER_PREFIX + digest[:40]


def principal_of(headers: Mapping[str, str]) -> Principal | None:
    """The principal the request's headers name (looked up without regard to case), or None. Only
    meaningful behind App Service Authentication (`easy_auth_enabled`)."""
    folded = {name.lower(): value for name, value in headers.items()}
    raw = folded.get(PRINCIPAL_ID_HEADER.lower())
    if not raw:
        return None
    if not isinstance(raw, str) or not raw.isprintable():
        raise ProblemError(
            ProblemCode.INVALID_USER_ID, f"'{PRINCIPAL_ID_HEADER}' is not printable text",
            field=PRINCIPAL_ID_HEADER,
        )
    provider = folded.get(PRINCIPAL_IDP_HEADER.lower()) or ""
    return Principal(provider, raw, stored_user_id(provider, raw))


def acting_user(named: str | None, principal: Principal | None) -> str | None:
    """Who a caller acts for, given the user it names (already checked) and the request's principal:
    the named user without Easy Auth; behind it the principal's stored id, which a named user may
    only repeat (403 `user_mismatch`)."""
    if not easy_auth_enabled():
        return named
    user = principal.user_id if principal is not None else None
    if named is not None and named != user:
        raise ProblemError(
            ProblemCode.USER_MISMATCH,
            f"with App Service Authentication on, '{USER_ID}' may only name the signed-in user",
            field=USER_ID,
        )
    return user


def query_user(req: func.HttpRequest) -> str | None:
    """The `user_id` query parameter, checked; given twice or more it is 400 `invalid_user_id`.
    The raw query is read: the parameters a handler gets keep one value of a repeated key (the
    first, the last, or joined with commas, depending on the protocol)."""
    given = [value for name, value in parse_qsl(urlsplit(req.url).query, keep_blank_values=True)
             if name == USER_ID]
    if len(given) > 1:
        raise ProblemError(
            ProblemCode.INVALID_USER_ID,
            f"the query parameter '{USER_ID}' is given {len(given)} times; name one user, once",
            field=USER_ID,
        )
    value = req.params.get(USER_ID)
    return None if value is None else check_user_id(value)


def caller_user(req: func.HttpRequest, body_user: str | None = None) -> str | None:
    """The user the request acts for, or None (no one in particular).

    `body_user`: the JSON body's `user_id`, when the route has a body. It and the query parameter
    must agree when both are given (400 `conflicting_fields`)."""
    query_user_id = query_user(req)
    named = None
    if body_user is not None:
        named = check_user_id(body_user)
    if query_user_id is not None:
        if named is not None and query_user_id != named:
            raise ProblemError(
                ProblemCode.CONFLICTING_FIELDS,
                f"the body's '{USER_ID}' and the query parameter name different users",
                field=USER_ID,
            )
        named = query_user_id
    return acting_user(named, request_principal(req) if easy_auth_enabled() else None)


def request_principal(req: func.HttpRequest) -> Principal | None:
    """The principal of an HTTP request (see `principal_of`)."""
    return principal_of(req.headers)


def _principal(req: func.HttpRequest) -> str | None:
    principal = request_principal(req)
    return principal.user_id if principal is not None else None


def named_user(req: func.HttpRequest) -> str:
    """The user a `users/{user_id}/...` route names: 400 `invalid_user_id` for a bad id, 400
    `conflicting_fields` when the `user_id` query parameter names another, and behind Easy Auth
    403 `user_mismatch` for anyone but the signed-in principal (the rule of `caller_user`: the
    answer depends on the two ids alone, so it tells nothing of the named user's data)."""
    user = check_user_id(req.route_params.get(USER_ID, ""))
    query_user_id = query_user(req)
    if query_user_id is not None and query_user_id != user:
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
