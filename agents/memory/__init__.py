"""Long-term memory: items that outlive a session, kept per user, in SQLite (one machine) or Azure
Table Storage (the app's storage account) (docs/agents.md)."""

from typing import TYPE_CHECKING

from .._lazy import lazy_names
from ._provider import UserMemoryProvider
from ._settings import (
    MEMORY_CONNECTION_ENV,
    MEMORY_PATH_ENV,
    MEMORY_STORE_ENV,
    MEMORY_TABLE_ENV,
    MemorySettings,
    default_memory_path,
    memory_store_from_env,
    use_memory_settings,
)
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
from ._summaries import SUMMARY_INSTRUCTIONS, ConversationMemoryProvider

if TYPE_CHECKING:
    from ._table import TableMemoryStore

__all__ = [
    "DEFAULT_MAX_ITEMS",
    "MAX_LIST_LIMIT",
    "MAX_QUERY_CHARS",
    "MAX_SEARCH_LIMIT",
    "MAX_TEXT_CHARS",
    "MEMORY_CONNECTION_ENV",
    "MEMORY_CURSOR_PATTERN",
    "MEMORY_PATH_ENV",
    "MEMORY_STORE_ENV",
    "MEMORY_TABLE_ENV",
    "SUMMARY_INSTRUCTIONS",
    "ConversationMemoryProvider",
    "InvalidMemory",
    "MemoryCursor",
    "MemoryFull",
    "MemoryHit",
    "MemoryItem",
    "MemoryNamespace",
    "MemoryPage",
    "MemorySettings",
    "MemoryStore",
    "MemoryStoreError",
    "SqliteMemoryStore",
    "TableMemoryStore",
    "UserMemoryProvider",
    "default_memory_path",
    "memory_store_from_env",
    "use_memory_settings",
]



# Loaded on first use: it imports the Tables SDK, which an app without Table memory never needs.
__getattr__ = lazy_names(__name__, {"TableMemoryStore": "._table"}, globals())
