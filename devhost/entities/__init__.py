"""Durable entities: ids, the SQLite entity store, and the gateway that runs queued operations as batches."""

from ._gateway import (
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_STATE_BYTES,
    EntityGateway,
    encode_input,
    make_entity_id,
    parse_entity_id,
)
from ._store import EntityStore, Message, NewMessage, StoredResult

__all__ = [
    "DEFAULT_MAX_BATCH",
    "DEFAULT_MAX_STATE_BYTES",
    "EntityGateway",
    "EntityStore",
    "Message",
    "NewMessage",
    "StoredResult",
    "encode_input",
    "make_entity_id",
    "parse_entity_id",
]
