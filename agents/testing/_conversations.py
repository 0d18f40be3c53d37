"""The Conversations API store: service-side conversations that Responses calls read and extend."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ._wire import RequestRejected, new_id

_ITEM_PREFIXES = {
    "message": "msg_",
    "function_call": "fc_",
    "function_call_output": "fco_",
    "reasoning": "rs_",
}


@dataclass
class Conversation:
    id: str
    created_at: int
    metadata: dict[str, Any]
    items: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "conversation",
            "created_at": self.created_at,
            "metadata": self.metadata,
        }


def conversation_not_found(conversation_id: str, param: str | None = None) -> RequestRejected:
    return RequestRejected(
        f"Conversation with id '{conversation_id}' not found.", param=param, code="not_found", status=404
    )


def conversation_id_of(value: Any) -> str | None:
    """The id in a Responses `conversation` parameter (a string or `{"id": ...}`)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("id"), str):
        return str(value["id"])
    raise RequestRejected(
        "Invalid type for 'conversation': expected a string or an object with 'id'.",
        param="conversation",
        code="invalid_type",
    )


def _with_id(item: dict[str, Any]) -> dict[str, Any]:
    if item.get("id"):
        return dict(item)
    kind = str(item.get("type", "message"))
    return {"id": new_id(_ITEM_PREFIXES.get(kind, "item_")), "type": kind, **item}


class ConversationStore:
    """Conversations kept in memory; every access holds the lock (the test thread may reset)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conversations: dict[str, Conversation] = {}

    def create(self, items: list[dict[str, Any]], metadata: dict[str, Any] | None) -> Conversation:
        conversation = Conversation(
            new_id("conv_"), int(time.time()), dict(metadata or {}), [_with_id(i) for i in items]
        )
        with self._lock:
            self._conversations[conversation.id] = conversation
        return conversation

    def get(self, conversation_id: str) -> Conversation | None:
        with self._lock:
            return self._conversations.get(conversation_id)

    def items(self, conversation_id: str) -> list[dict[str, Any]]:
        with self._lock:
            found = self._conversations.get(conversation_id)
            if found is None:
                raise conversation_not_found(conversation_id, param="conversation")
            return list(found.items)

    def append(self, conversation_id: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        added = [_with_id(i) for i in items]
        with self._lock:
            found = self._conversations.get(conversation_id)
            if found is None:
                raise conversation_not_found(conversation_id)
            found.items.extend(added)
        return added

    def delete(self, conversation_id: str) -> bool:
        with self._lock:
            return self._conversations.pop(conversation_id, None) is not None

    def clear(self) -> None:
        with self._lock:
            self._conversations.clear()
