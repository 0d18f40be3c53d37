"""URLs as the host logs them: secrets (function keys, signatures, the RPC key) never reach a log."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlencode

from aiohttp import web

SECRET_PARAMETERS = frozenset({"code", "key", "sig"})
"""Query parameters whose values are credentials (compared case-insensitively)."""

REDACTED = "REDACTED"


def loggable_url(request: web.Request, hidden: Iterable[str] = ()) -> str:
    """``request``'s path and query with every secret replaced by ``REDACTED``.

    The query is read the way the host reads it (decoded names, so ``%63ode=`` counts as
    ``code=``); ``hidden`` are further strings (the RPC key in the path) to blank out.
    """
    path = request.path
    for secret in hidden:
        if secret:
            path = path.replace(secret, REDACTED)
    if not request.query:
        return path
    pairs = [(name, REDACTED if name.lower() in SECRET_PARAMETERS else value)
             for name, value in request.query.items()]
    return f"{path}?{urlencode(pairs)}"
