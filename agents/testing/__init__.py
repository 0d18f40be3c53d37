"""A real local OpenAI-compatible model server for tests and for running without a model key.

`ModelServer` speaks Chat Completions and the Responses API over HTTP (JSON and SSE streaming)
so the official `openai` client works against it unmodified. Replies come from a `ModelRoute`
(requests of one kind answered apart), a FIFO script of `Reply` objects, a `handler` callable,
or the deterministic offline model documented in
`agents.testing._offline` and docs/model-server.md; ``/embeddings`` answers deterministic vectors
(`hashed_embedding`, a test double of an embedding model).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ._embeddings import DEFAULT_EMBEDDING_DIMENSIONS, EmbeddingRequest, hashed_embedding
    from ._offline import SchemaInstanceError, count_tokens, offline_reply, schema_instance
    from ._replies import Message, ModelRequest, Reply, ToolCall, ToolSpec, UsageOverride
    from ._script import ModelRoute
    from ._server import ModelServer, ModelServerError
    from ._startup import OfflineModel, start_offline_model_if_unconfigured

# Loaded on first use (PEP 562): the startup hook needs only `_startup`, which defers the
# server's imports (aiohttp, jsonschema, pydantic) to a thread.
_WHERE = {
    "DEFAULT_EMBEDDING_DIMENSIONS": "._embeddings",
    "EmbeddingRequest": "._embeddings",
    "Message": "._replies",
    "ModelRequest": "._replies",
    "ModelRoute": "._script",
    "ModelServer": "._server",
    "ModelServerError": "._server",
    "OfflineModel": "._startup",
    "Reply": "._replies",
    "SchemaInstanceError": "._offline",
    "ToolCall": "._replies",
    "ToolSpec": "._replies",
    "UsageOverride": "._replies",
    "count_tokens": "._offline",
    "hashed_embedding": "._embeddings",
    "offline_reply": "._offline",
    "schema_instance": "._offline",
    "start_offline_model_if_unconfigured": "._startup",
}

__all__ = [
    "DEFAULT_EMBEDDING_DIMENSIONS",
    "EmbeddingRequest",
    "Message",
    "ModelRequest",
    "ModelRoute",
    "ModelServer",
    "ModelServerError",
    "OfflineModel",
    "Reply",
    "SchemaInstanceError",
    "ToolCall",
    "ToolSpec",
    "UsageOverride",
    "count_tokens",
    "hashed_embedding",
    "offline_reply",
    "schema_instance",
    "start_offline_model_if_unconfigured",
]


__getattr__ = lazy_names(__name__, _WHERE, globals())
