"""application/problem+json responses."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web


def problem(status: int, code: str, detail: str, **extra: Any) -> web.Response:
    """A problem+json response naming what went wrong."""
    body = {"type": "about:blank", "title": code.replace("_", " "), "status": status,
            "code": code, "detail": detail, **extra}
    return web.Response(status=status, text=json.dumps(body), content_type="application/problem+json")
