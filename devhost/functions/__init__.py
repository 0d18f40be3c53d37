"""The app's functions: their index (from the worker's metadata), route templates, HTTP triggers, keys."""

from .._settings import KEY_ENV, ensure_importable
from ..worker import list_functions
from ._http_trigger import HttpDispatcher, key_matches, to_aiohttp
from ._index import (
    AppModel,
    HttpFunction,
    McpToolFunction,
    NamedFunction,
    index_metadata,
    load_app,
)
from ._routes import RouteTemplate, compile_route, sort_key

__all__ = [
    "KEY_ENV",
    "AppModel",
    "HttpDispatcher",
    "HttpFunction",
    "McpToolFunction",
    "NamedFunction",
    "RouteTemplate",
    "compile_route",
    "ensure_importable",
    "index_metadata",
    "key_matches",
    "list_functions",
    "load_app",
    "sort_key",
    "to_aiohttp",
]
