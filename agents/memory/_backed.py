"""What the long-term memory providers share: their store and their embedder, both resolved from
the app's settings on first use (so an agent module can be imported where neither is set up),
and an embedding that never fails a turn."""

from __future__ import annotations

import logging
from typing import Literal

from .._embeddings import Embedder, EmbeddingError, embedder_from_env
from ._settings import memory_store_from_env
from ._store import MemoryStore

log = logging.getLogger("agents.memory")


class StoreBacked:
    """A provider's memory store (default: the app's, `memory_store_from_env`) and embedder
    (default `"env"`: `embedder_from_env`, None when no embedding model is configured; None:
    words only)."""

    _store: MemoryStore | None
    _embedder: Embedder | Literal["env"] | None

    def _back(self, store: MemoryStore | None, embedder: Embedder | Literal["env"] | None) -> None:
        self._store = store
        self._embedder = embedder

    @property
    def store(self) -> MemoryStore:
        if self._store is None:
            self._store = memory_store_from_env()
        return self._store

    @property
    def embedder(self) -> Embedder | None:
        if self._embedder == "env":
            self._embedder = embedder_from_env()
        return self._embedder

    async def _embedded(self, text: str) -> tuple[float, ...] | None:
        """The text's embedding; None without an embedder, for an empty text, or when the model
        fails (logged: the caller goes on by words)."""
        embedder = self.embedder
        if embedder is None or not text.strip():
            return None
        try:
            [vector] = await embedder.embed([text])
        except EmbeddingError as error:
            log.warning("memory: no embedding from %s, searching by words: %s", embedder.model, error)
            return None
        return vector
