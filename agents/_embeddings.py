"""Embeddings: text to vectors, from the configured model endpoint's embeddings API.

`Embedder` is what a caller needs (long-term memory searches by similarity with one);
`OpenAIEmbedder` calls ``client.embeddings.create`` on the same endpoint, credential, client and
retry loop as the agent's model calls (`_client`). The model is named by Microsoft Agent
Framework's settings: ``OPENAI_EMBEDDING_MODEL_ID`` (OpenAI or an OpenAI-compatible server) or
``AZURE_OPENAI_EMBEDDING_DEPLOYMENT_NAME`` (Azure OpenAI); the endpoint and key are the chat
model's (`ModelEnv`). Unset: `embedder_from_env` answers None and nothing is embedded.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ._client import call_with_retries, get_client
from ._errors import AgentsError
from ._settings import (
    Endpoint,
    ModelConnection,
    ModelEnv,
    ModelSettings,
    resolve_endpoint,
    resolve_provider,
)

MAX_EMBEDDING_DIMENSIONS = 8_192
"""Longest vector accepted from a model (the largest embedding models have 3,072 dimensions)."""


class EmbeddingError(AgentsError):
    """The embedding model could not be reached, or answered something that is not an embedding
    of every text asked (the message says which)."""


class Embedder(Protocol):
    """Turns texts into vectors of one model: `embed(texts)` answers one vector per text, in order,
    all of one length, or raises `EmbeddingError`."""

    @property
    def model(self) -> str:
        """The model (or Azure deployment) the vectors come from."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]: ...


def checked_vectors(data: Any, count: int, dimensions: int | None) -> list[tuple[float, ...]]:
    """The vectors of an embeddings answer's ``data``: one per text asked (``count``), each 1 to
    `MAX_EMBEDDING_DIMENSIONS` finite numbers, all of one length (``dimensions`` when known);
    `EmbeddingError` naming what is wrong otherwise."""
    if not isinstance(data, list) or len(data) != count:
        raise EmbeddingError(f"the embedding model answered {_count(data)} vectors for {count} texts")
    ordered = sorted(data, key=_index)  # the service numbers its answers; keep the texts' order
    vectors: list[tuple[float, ...]] = []
    for item in ordered:
        raw = getattr(item, "embedding", None)
        if not isinstance(raw, list) or not 0 < len(raw) <= MAX_EMBEDDING_DIMENSIONS:
            raise EmbeddingError(
                f"the embedding model answered something other than a list of 1 to "
                f"{MAX_EMBEDDING_DIMENSIONS} numbers"
            )
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in raw):
            raise EmbeddingError("the embedding model answered a vector holding something other than numbers")
        vector = tuple(float(v) for v in raw)
        if not all(math.isfinite(v) for v in vector):
            raise EmbeddingError("the embedding model answered a vector holding a non-finite number")
        if dimensions is not None and len(vector) != dimensions:
            raise EmbeddingError(
                f"the embedding model answered {len(vector)} dimensions where {dimensions} were expected"
            )
        dimensions = len(vector)
        vectors.append(vector)
    return vectors


def _index(item: Any) -> int:
    index = getattr(item, "index", 0)
    return index if isinstance(index, int) else 0


def _count(data: Any) -> int:
    return len(data) if isinstance(data, list) else 0


class OpenAIEmbedder:
    """`Embedder` over the OpenAI (or Azure OpenAI) embeddings API of ``endpoint`` (its ``model``
    is the embedding model or deployment). ``dimensions``: ask the model for vectors this long
    (``text-embedding-3`` models) and refuse any other length; without it, the first answer's
    length is the one every later answer must have (vectors of two lengths cannot be compared)."""

    def __init__(
        self, endpoint: Endpoint, connection: ModelConnection | None = None, *, dimensions: int | None = None
    ) -> None:
        if dimensions is not None and not 0 < dimensions <= MAX_EMBEDDING_DIMENSIONS:
            raise ValueError(f"dimensions must be 1 to {MAX_EMBEDDING_DIMENSIONS}")
        self.endpoint = endpoint
        self.connection = connection or ModelConnection()
        self.dimensions = dimensions
        self._seen: int | None = dimensions

    @property
    def model(self) -> str:
        return self.endpoint.model

    async def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        if not texts:
            return []
        extra: dict[str, Any] = {} if self.dimensions is None else {"dimensions": self.dimensions}

        async def attempt(timeout: float) -> Any:
            client = get_client(self.endpoint)  # the chat calls' client: one pool and credential
            return await client.embeddings.create(
                model=self.endpoint.model,
                input=list(texts),
                encoding_format="float",  # the SDK otherwise asks for base64 and decodes it itself
                timeout=timeout,
                **extra,
            )

        try:
            answer = await call_with_retries(attempt, self.connection.retry, self.connection.timeout)
        except AgentsError as error:  # ModelCallError: the final failure of the retry loop
            raise EmbeddingError(f"the embedding model failed: {error}") from error
        vectors = checked_vectors(getattr(answer, "data", None), len(texts), self._seen)
        self._seen = len(vectors[0])
        return vectors


def embedding_model_env(provider: str) -> ModelEnv:
    """The setting that names the embedding model of a provider (Microsoft Agent Framework's)."""
    if provider == "azure":
        return ModelEnv.AZURE_OPENAI_EMBEDDING_DEPLOYMENT_NAME
    return ModelEnv.OPENAI_EMBEDDING_MODEL_ID


def embedder_from_env(
    connection: ModelConnection | None = None, environ: Mapping[str, str] | None = None
) -> OpenAIEmbedder | None:
    """The embedder the environment configures on ``connection`` (default: the chat model's
    endpoint from `ModelEnv`), or None when no embedding model is named. `AgentConfigurationError`
    when one is named but no endpoint is configured."""
    env = os.environ if environ is None else environ
    conn = connection or ModelConnection()
    model = env.get(embedding_model_env(resolve_provider(conn, env)), "").strip()
    if not model:
        return None
    return OpenAIEmbedder(resolve_endpoint(ModelSettings(model, connection=conn), env), conn)
