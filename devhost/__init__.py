"""A local Azure Functions + Durable Functions host for the function app (``python -m devhost``)."""

from ._errors import AppLoadError, DevHostError, EntityIdError, RouteTemplateError
from ._host import LocalHost
from ._main import main
from .entities._gateway import EntityGateway, encode_input, make_entity_id, parse_entity_id
from .functions._index import list_functions

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
