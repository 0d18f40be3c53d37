"""A local Azure Functions + Durable Functions host for the function app (``python -m devhost``).

The names below load on first use: a worker process (``python -m devhost.worker``) imports this
package too, and needs none of the host's own parts (the HTTP server, the MCP SDK).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._errors import AppLoadError, DevHostError, EntityIdError, RouteTemplateError
    from ._host import LocalHost
    from ._main import main
    from .entities import EntityGateway, encode_input, make_entity_id, parse_entity_id
    from .worker import list_functions

_WHERE = {
    "AppLoadError": "._errors",
    "DevHostError": "._errors",
    "EntityIdError": "._errors",
    "RouteTemplateError": "._errors",
    "LocalHost": "._host",
    "main": "._main",
    "EntityGateway": ".entities",
    "encode_input": ".entities",
    "make_entity_id": ".entities",
    "parse_entity_id": ".entities",
    "list_functions": ".worker",
}

__all__ = [
    "AppLoadError",
    "DevHostError",
    "EntityGateway",
    "EntityIdError",
    "LocalHost",
    "RouteTemplateError",
    "encode_input",
    "list_functions",
    "main",
    "make_entity_id",
    "parse_entity_id",
]


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'devhost' has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value
    return value
