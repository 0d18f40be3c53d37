"""Long-term memory: items that outlive a session, kept per user (docs/agents.md)."""

from ._provider import UserMemoryProvider
from ._settings import MEMORY_PATH_ENV, default_memory_path, memory_store_from_env
from ._sqlite import SqliteMemoryStore
from ._store import (
    DEFAULT_MAX_ITEMS,
    MAX_LIST_LIMIT,
    MAX_QUERY_CHARS,
    MAX_SEARCH_LIMIT,
    MAX_TEXT_CHARS,
    MEMORY_CURSOR_PATTERN,
    InvalidMemory,
    MemoryCursor,
    MemoryFull,
    MemoryHit,
    MemoryItem,
    MemoryNamespace,
    MemoryPage,
    MemoryStore,
    MemoryStoreError,
)

__all__ = [
    "DEFAULT_MAX_ITEMS",
    "MAX_LIST_LIMIT",
    "MAX_QUERY_CHARS",
    "MAX_SEARCH_LIMIT",
    "MAX_TEXT_CHARS",
    "MEMORY_CURSOR_PATTERN",
    "MEMORY_PATH_ENV",
    "InvalidMemory",
    "MemoryCursor",
    "MemoryFull",
    "MemoryHit",
    "MemoryItem",
    "MemoryNamespace",
    "MemoryPage",
    "MemoryStore",
    "MemoryStoreError",
    "SqliteMemoryStore",
    "UserMemoryProvider",
    "default_memory_path",
    "memory_store_from_env",
]
