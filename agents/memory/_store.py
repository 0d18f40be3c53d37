"""Long-term memory: items that outlive a session, kept per user (and optionally per agent).

One small interface (`MemoryStore`) with backends underneath (`SqliteMemoryStore`). Every
operation a turn uses names its `MemoryNamespace`; nothing reads across namespaces, so one user's
items can never reach another user's turn. The user's own listing (`list_user`, `find`: what the
HTTP API shows a user) reads across that one user's namespaces, never another user's. Search is
by keywords, or by similarity when the caller gives the query's embedding and the items carry
embeddings of the same model.
"""

from __future__ import annotations

import array
import base64
import binascii
import json
import math
import operator
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from .._errors import AgentsError

MAX_NAMESPACE_PART = 128
"""Longest user id or agent name of a namespace."""
MAX_TEXT_CHARS = 4_000
"""Longest item text: a memory is a fact or a summary, not a document."""
MAX_METADATA_BYTES = 4 * 1024
"""Largest item metadata, as compact JSON."""
MAX_EMBEDDING_DIMENSIONS = 8_192
"""Longest accepted embedding (the largest embedding models have 3,072 dimensions)."""
DEFAULT_MAX_ITEMS = 1_000
"""Items a namespace holds unless the store says otherwise; a put past it is refused
(`MemoryFull`): search reads a namespace whole, so it stays bounded."""
MAX_SEARCH_LIMIT = 100
"""Most results one search returns."""

# The rule of hosting's ids (URL-unreserved characters only): a namespace part ends up in store
# keys and URLs. "." and ".." are refused too (URL dot segments).
_PART = re.compile(rf"[A-Za-z0-9._~-]{{1,{MAX_NAMESPACE_PART}}}")
_WORD = re.compile(r"\w+")


class MemoryStoreError(AgentsError):
    """A memory store operation cannot be done (the subclasses say why)."""


class InvalidMemory(MemoryStoreError, ValueError):
    """An item, a namespace or a search that breaks the rules above; nothing was stored."""


class MemoryFull(MemoryStoreError):
    """The namespace holds its store's `max_items` already; nothing was stored."""


def checked_part(value: object, what: str) -> str:
    """`value` if it is a valid namespace part or id (the rule above), else `InvalidMemory`."""
    if not isinstance(value, str) or _PART.fullmatch(value) is None or value in (".", ".."):
        raise InvalidMemory(
            f"{what} must be 1 to {MAX_NAMESPACE_PART} letters, digits, '.', '_', '~' or '-' "
            "(not '.' or '..')"
        )
    return value


@dataclass(frozen=True)
class MemoryNamespace:
    """Whose items: a user, and optionally one agent of theirs (None: shared by the user's agents)."""

    user_id: str
    agent: str | None = None

    def __post_init__(self) -> None:
        checked_part(self.user_id, "a memory namespace's user id")
        if self.agent is not None:
            checked_part(self.agent, "a memory namespace's agent")


@dataclass(frozen=True)
class MemoryItem:
    """One remembered item. `created_at` / `updated_at`: RFC 3339 UTC."""

    id: str
    namespace: MemoryNamespace
    text: str
    created_at: str
    updated_at: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    source_session: str | None = None
    embedding: tuple[float, ...] | None = None


@dataclass(frozen=True)
class MemoryHit:
    """A search result: the item and how well it matched (0-1: the share of the query's words it
    holds, or the cosine similarity of the embeddings)."""

    item: MemoryItem
    score: float


# -- listing a user's items (across their namespaces) ---------------------------------------
# Newest created first, keyset-paged. Creation time never changes (a replaced item keeps it), so
# a cursor stays valid while items are added, replaced or deleted: a page never repeats an item of
# an earlier page nor skips one that existed when the listing started.

MAX_LIST_LIMIT = 100
"""Most items one page of a listing holds."""
MAX_QUERY_CHARS = 256
"""Longest query of a listing: keywords, not a document (and, percent-encoded, it must fit a
request line: hosts refuse lines over 8 KiB before the app sees them)."""
MAX_CURSOR_CHARS = 512
"""Longest cursor text (a cursor holds a timestamp and two namespace parts)."""
MEMORY_CURSOR_PATTERN = rf"^[A-Za-z0-9_-]{{1,{MAX_CURSOR_CHARS}}}$"
"""What a cursor looks like (base64url): a first check, before it is decoded."""


@dataclass(frozen=True)
class MemoryCursor:
    """Where a page ended: the last item's (creation time, agent key, id). The agent key is ""
    for items shared by the user's agents."""

    created_at: str
    agent: str
    item_id: str

    @classmethod
    def after(cls, item: MemoryItem) -> MemoryCursor:
        """The cursor of a page that ends with `item`."""
        return cls(item.created_at, item.namespace.agent or "", item.id)

    @classmethod
    def parse(cls, text: str) -> MemoryCursor:
        """The cursor `text` spells (`str(cursor)`); `InvalidMemory` for anything else."""
        problem = InvalidMemory("a memory cursor must be the 'next' of a previous page")
        if not isinstance(text, str) or not 0 < len(text) <= MAX_CURSOR_CHARS or not text.isascii():
            raise problem
        try:
            raw = base64.urlsafe_b64decode(text.encode("ascii") + b"=" * (-len(text) % 4)).decode("utf-8")
        except (binascii.Error, UnicodeError, ValueError):
            raise problem from None
        parts = raw.split("\n")
        if len(parts) != 3:
            raise problem
        created, agent, item_id = parts
        try:
            stamp = datetime.fromisoformat(created)
            if stamp.tzinfo is None or len(created) > 40:
                raise ValueError(created)
            if agent:
                checked_part(agent, "a cursor's agent")
            checked_part(item_id, "a cursor's id")
        except (ValueError, InvalidMemory):
            raise problem from None
        return cls(created, agent, item_id)

    def __str__(self) -> str:
        raw = f"{self.created_at}\n{self.agent}\n{self.item_id}".encode()
        return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


@dataclass(frozen=True)
class MemoryPage:
    """One page of a user's items, newest created first, and the cursor of the next page (None:
    this was the last). Items carry no embedding."""

    items: list[MemoryItem]
    next: MemoryCursor | None


def checked_listing(query: str, limit: int) -> tuple[set[str], int]:
    """A listing's query words and limit; `InvalidMemory` for a query or limit out of bounds."""
    if not isinstance(query, str) or len(query) > MAX_QUERY_CHARS:
        raise InvalidMemory(f"a listing's query must be text of at most {MAX_QUERY_CHARS} characters")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIST_LIMIT:
        raise InvalidMemory(f"a listing's limit must be 1 to {MAX_LIST_LIMIT}")
    return words(query), limit


def matches(query_words: set[str], item: MemoryItem) -> bool:
    """Whether a listing with these query words shows the item (no words: every item)."""
    return not query_words or keyword_score(query_words, item.text) > 0


class MemoryStore(Protocol):
    """Where long-term memory is kept. Every method is scoped to one namespace, or (`list_user`,
    `find`) to one user."""

    async def put(
        self,
        namespace: MemoryNamespace,
        text: str,
        *,
        item_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        source_session: str | None = None,
        embedding: Sequence[float] | None = None,
        upsert: bool = False,
    ) -> MemoryItem:
        """Store a new item (a fresh id), or replace the item `item_id` (keeping its creation
        time); with `upsert`, an `item_id` not stored yet is created with that id (what a writer
        that may run twice uses, so its second write replaces the first). `InvalidMemory` /
        `MemoryFull` when it cannot be stored."""
        ...

    async def get(self, namespace: MemoryNamespace, item_id: str) -> MemoryItem | None:
        """The item, or None (also for an id of another namespace)."""
        ...

    async def search(
        self,
        namespace: MemoryNamespace,
        query: str = "",
        *,
        embedding: Sequence[float] | None = None,
        limit: int = 10,
    ) -> list[MemoryHit]:
        """The best matches, best first: by similarity to `embedding` among items embedded with
        as many dimensions, else by the query's words; an empty query lists the newest items."""
        ...

    async def delete(self, namespace: MemoryNamespace, item_id: str) -> bool:
        """Delete the item; whether there was one."""
        ...

    async def list_user(
        self, user_id: str, query: str = "", *, limit: int = 20, after: MemoryCursor | None = None
    ) -> MemoryPage:
        """One page of the user's items across all their namespaces (shared and per agent),
        newest created first, after `after`; with a query, only the items holding one of its
        words (`checked_listing`). The items carry no embedding."""
        ...

    async def find(self, user_id: str, item_id: str) -> MemoryItem | None:
        """The user's item `item_id` (without its embedding) in whichever of their namespaces
        holds it, or None (also for another user's id)."""
        ...


# -- the rules every backend applies ----------------------------------------------------------


def checked_text(text: object) -> str:
    """An item's text, whitespace-trimmed; `InvalidMemory` for an empty or oversized one."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidMemory("a memory's text must be a non-empty string")
    text = text.strip()
    if len(text) > MAX_TEXT_CHARS:
        raise InvalidMemory(f"a memory's text must be at most {MAX_TEXT_CHARS} characters (got {len(text)})")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidMemory("a memory's text holds a lone surrogate, which is not text") from None
    return text


def metadata_json(metadata: Mapping[str, Any] | None) -> str:
    """The metadata as compact JSON text; `InvalidMemory` when it is not a JSON object or too big."""
    try:
        text = json.dumps(dict(metadata or {}), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InvalidMemory(f"a memory's metadata must be a JSON object: {error}") from None
    if len(text.encode("utf-8")) > MAX_METADATA_BYTES:
        raise InvalidMemory(f"a memory's metadata must be at most {MAX_METADATA_BYTES} bytes of JSON")
    return text


def checked_embedding(embedding: Sequence[float] | None) -> tuple[float, ...] | None:
    """The embedding as a tuple of finite floats (None: none); `InvalidMemory` otherwise."""
    if embedding is None:
        return None
    values = tuple(float(v) for v in embedding)
    if not 0 < len(values) <= MAX_EMBEDDING_DIMENSIONS or not all(math.isfinite(v) for v in values):
        raise InvalidMemory(
            f"an embedding must hold 1 to {MAX_EMBEDDING_DIMENSIONS} finite numbers"
        )
    return values


def pack_embedding(embedding: tuple[float, ...] | None) -> bytes | None:
    """An embedding as stored: little-endian float64s (8 bytes a dimension, values kept exactly)."""
    if embedding is None:
        return None
    values = array.array("d", embedding)
    if sys.byteorder == "big":
        values.byteswap()
    return values.tobytes()


def unpack_embedding(blob: bytes | None) -> tuple[float, ...] | None:
    """The embedding `pack_embedding` stored."""
    if blob is None:
        return None
    values = array.array("d")
    values.frombytes(blob)
    if sys.byteorder == "big":
        values.byteswap()
    return tuple(values)


def checked_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise InvalidMemory(f"a search's limit must be 1 to {MAX_SEARCH_LIMIT}")
    return limit


def words(text: str) -> set[str]:
    """The words of a text, case-folded (letters and digits of any script)."""
    return set(_WORD.findall(text.casefold()))


def keyword_score(query_words: set[str], text: str) -> float:
    """The share of the query's words the text holds."""
    if not query_words:
        return 0.0
    return len(query_words & words(text)) / len(query_words)


def _dot_fallback(a: Sequence[float], b: Sequence[float]) -> float:
    return math.fsum(map(operator.mul, a, b))


# math.sumprod (Python 3.12+): in C and with extended precision, several times faster than a
# Python sum of products (a 1,000-item search of 1,536-dimension vectors: docs/bench.md).
dot: Callable[[Sequence[float], Sequence[float]], float] = getattr(math, "sumprod", _dot_fallback)


@dataclass(frozen=True)
class Candidate:
    """What a search ranks of an item (backends read only this much of every item, and whole
    items for the hits alone)."""

    id: str
    text: str
    updated_at: str
    embedding: tuple[float, ...] | None = None


def rank(
    candidates: Sequence[Candidate], query: str, embedding: tuple[float, ...] | None, limit: int
) -> list[tuple[str, float]]:
    """The search every backend answers, over the namespace's items: (id, score) of the best,
    best first (newest first on ties).

    With a query embedding, an item embedded with as many dimensions scores its cosine similarity
    and any other item (stored before embeddings were configured, or by another model) the share
    of the query's words it holds, kept only when it holds one: an item without a vector is still
    found by its words, among the similar ones. Without an embedding, by words alone."""
    newest = sorted(candidates, key=lambda c: c.updated_at, reverse=True)
    wanted = words(query)
    if embedding is not None:
        scored: list[tuple[str, float]] = []
        query_norm = math.sqrt(dot(embedding, embedding))  # once, not once an item
        for c in newest:
            if c.embedding is not None and len(c.embedding) == len(embedding):
                norms = query_norm * math.sqrt(dot(c.embedding, c.embedding))
                scored.append((c.id, dot(embedding, c.embedding) / norms if norms else 0.0))
            elif (score := keyword_score(wanted, c.text)) > 0:
                scored.append((c.id, score))
        if any(c.embedding is not None and len(c.embedding) == len(embedding) for c in newest):
            return sorted(scored, key=lambda s: s[1], reverse=True)[:limit]
    if not wanted:
        return [(c.id, 0.0) for c in newest[:limit]]
    scored = [(c.id, keyword_score(wanted, c.text)) for c in newest]
    return sorted((s for s in scored if s[1] > 0), key=lambda s: s[1], reverse=True)[:limit]
