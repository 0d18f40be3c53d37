"""Serving the console's static files: read once at startup, answered from memory.

Only the files present in `static/` when the app starts can be answered: a request names a key of
that in-memory table, never a filesystem path, so no input reaches the disk. Every answer carries
a strict Content-Security-Policy (scripts, styles, fetches and images from this origin only;
`data:` images; no inline script, no plugins, no framing; Trusted Types with DOMPurify's policy
as the only way to HTML) and an ETag; browsers revalidate
(`Cache-Control: no-cache`) and get a 304 while a file is unchanged.
"""

from __future__ import annotations

import hashlib
import pathlib
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

import azure.functions as func

from .._errors import ProblemCode, ProblemError

STATIC_DIR = pathlib.Path(__file__).resolve().parent / "static"

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        # Trusted Types: an HTML string reaches innerHTML only through DOMPurify's policy, so a
        # forgotten sanitizer call is an error, not a hole.
        "require-trusted-types-for 'script'",
        "trusted-types dompurify",
    )
)
"""The policy every console answer carries: nothing inline, nothing from another origin, HTML
only through the sanitizer."""

_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".json": "application/json",
    ".txt": "text/plain; charset=utf-8",
    ".ico": "image/x-icon",
    ".png": "image/png",
}

_SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


@dataclass(frozen=True)
class Asset:
    """One static file: its bytes, media type and entity tag."""

    body: bytes
    content_type: str
    etag: str


def load_assets(root: pathlib.Path = STATIC_DIR) -> MappingProxyType[str, Asset]:
    """Every servable file under `root`, keyed by its `/`-separated relative path."""
    assets: dict[str, Asset] = {}
    for path in sorted(root.rglob("*")):
        content_type = _CONTENT_TYPES.get(path.suffix.lower())
        if not path.is_file() or content_type is None:
            continue
        body = path.read_bytes()
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        assets[path.relative_to(root).as_posix()] = Asset(body, content_type, etag)
    return MappingProxyType(assets)


def _matches(if_none_match: str | None, etag: str) -> bool:
    if not if_none_match:
        return False
    tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
    return "*" in tags or etag in tags


class Console:
    """The handler of the console route: `console/` is the page, `console/{path}` its assets."""

    def __init__(self, assets: MappingProxyType[str, Asset] | None = None) -> None:
        self.assets = load_assets() if assets is None else assets
        if "index.html" not in self.assets:
            raise FileNotFoundError(f"the console's index.html is missing from {STATIC_DIR}")

    async def serve(self, req: func.HttpRequest, client: Any = None) -> func.HttpResponse:
        """GET console/{*path}"""
        path = (req.route_params.get("path") or "").strip("/")
        if not path and not urlsplit(req.url).path.endswith("/"):
            # The page's assets are relative to `console/`: send `.../console` there (a relative
            # Location, so it never depends on the Host header).
            return func.HttpResponse(status_code=308, headers={"Location": "console/", **_SECURITY_HEADERS})
        asset = self.assets.get(path or "index.html")
        if asset is None:
            raise ProblemError(
                ProblemCode.CONSOLE_ASSET_NOT_FOUND,
                f"the console has no file {path[:200]!r}",
                field="path",
            )
        headers = {**_SECURITY_HEADERS, "ETag": asset.etag, "Cache-Control": "no-cache"}
        if _matches(req.headers.get("if-none-match"), asset.etag):
            return func.HttpResponse(status_code=304, headers=headers)
        headers["Content-Type"] = asset.content_type
        return func.HttpResponse(body=asset.body, status_code=200, headers=headers)
