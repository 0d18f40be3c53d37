"""Request bodies of HTTP triggers, read with the Functions host's size limit enforced while reading.

The host's app setting ``FUNCTIONS_REQUEST_BODY_SIZE_LIMIT`` (bytes, default 100 MiB as in Azure)
bounds every trigger's body, anonymous routes included: a declared ``Content-Length`` over it is
refused before a byte is read, and a chunked body is refused as soon as it passes the limit, so no
caller can make the host hold more than the limit per request. The limit binds every method, and
whether or not the function reads the body, as the host's does.
"""

from __future__ import annotations

import os

from aiohttp import web

from .._problems import problem

BODY_LIMIT_ENV = "FUNCTIONS_REQUEST_BODY_SIZE_LIMIT"
DEFAULT_BODY_LIMIT = 100 * 1024 * 1024
_CHUNK = 64 * 1024


def body_limit_from_env() -> int:
    """``FUNCTIONS_REQUEST_BODY_SIZE_LIMIT`` when set to a positive number, else 100 MiB."""
    configured = os.environ.get(BODY_LIMIT_ENV, "").strip()
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    return DEFAULT_BODY_LIMIT


class BodyTooLarge(Exception):
    """The body passed the limit (``size`` is what was declared or read so far)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"the request body is over the host's limit of {limit} bytes")
        self.size = size
        self.limit = limit

    def response(self) -> web.Response:
        """The 413 problem (the same code the app uses for its own, smaller, limit)."""
        return problem(413, "body_too_large",
                       f"the request body is larger than the host's limit of {self.limit} bytes "
                       f"({BODY_LIMIT_ENV}); it was not read", limit=self.limit)


async def read_limited(request: web.Request, limit: int) -> bytes:
    """The whole body, or ``BodyTooLarge`` once it is known to exceed ``limit``."""
    declared = request.content_length
    if declared is not None and declared > limit:
        raise BodyTooLarge(declared, limit)
    parts: list[bytes] = []
    size = 0
    while True:
        chunk = await request.content.read(_CHUNK)
        if not chunk:
            return b"".join(parts)
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(size, limit)
        parts.append(chunk)
