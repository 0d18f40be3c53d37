"""Who may drive the local host from a browser: the loopback rule for every route.

While the host listens on loopback only, a request must name the host as a loopback address
(``Host``) and, when it comes from a web page, come from a loopback page (``Origin``). Without the
first, a page could reach 127.0.0.1 through a name of its own that resolves there (DNS rebinding);
without the second, any page the developer visits could send the API cross-site requests a
browser sends without asking first (a ``text/plain`` POST needs no preflight). A foreign ``Host``
is 421 (the request reached a server that does not serve that name), a foreign ``Origin`` 403.

A host listening on another interface was exposed on purpose, under names it cannot know: the rule
is off there, and the function key is what protects it (as in Azure, where the front end serves
only the app's own host names and keys guard the routes).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from ._problems import problem

LOOPBACK_INTERFACES = frozenset({"127.0.0.1", "localhost", "::1"})
_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
# A host name (or bracketed IPv6 address) and an optional port, as in a Host header.
_AUTHORITY = re.compile(r"(?P<name>\[[0-9a-fA-F:.]+\]|[^:\[\]/]+)(?::(?P<port>[0-9]{1,5}))?")
_ORIGIN = re.compile(r"(?P<scheme>https?)://(?P<authority>[^/]+)")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def loopback_only(interface: str) -> bool:
    """Whether a host listening on ``interface`` serves this machine alone (the rule applies)."""
    return interface in LOOPBACK_INTERFACES


def is_loopback_authority(authority: str) -> bool:
    """Whether ``authority`` (``name[:port]``) names this machine by a loopback address."""
    match = _AUTHORITY.fullmatch(authority)
    return match is not None and match["name"].lower() in _LOOPBACK_NAMES


def is_loopback_origin(origin: str) -> bool:
    """Whether an ``Origin`` header is a page served from a loopback address."""
    match = _ORIGIN.fullmatch(origin.strip().lower())
    return match is not None and is_loopback_authority(match["authority"])


def refusal(request: web.Request) -> web.Response | None:
    """The 421 or 403 problem for a request a loopback-only host must not serve, else None."""
    host = request.headers.get("Host", "")
    if not is_loopback_authority(host):
        return problem(421, "misdirected_request",
                       f"this host serves loopback names only (127.0.0.1, localhost, [::1]), "
                       f"not Host {host!r}")
    origin = request.headers.get("Origin")
    if origin is not None and not is_loopback_origin(origin):
        return problem(403, "foreign_origin",
                       f"requests from web pages are served only from a loopback origin, "
                       f"not {origin!r}")
    return None


def loopback_middleware(interface: str) -> Middleware:
    """The aiohttp middleware applying the rule to every route of a host on ``interface``."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        refused = refusal(request) if loopback_only(interface) else None
        return refused if refused is not None else await handler(request)

    return check
