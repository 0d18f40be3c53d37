"""The long-term memory store on both backends, a real SQLite file and a real Azure Table Storage
table (Azurite): namespaces never mix, search by words and by embeddings, limits refuse what does
not fit (also when puts race to the limit); the SQLite file is its owner's alone."""

from __future__ import annotations

import asyncio
import os
import pathlib
import stat
from collections.abc import Callable
from typing import Any

import pytest

import agents.memory as memory
from agents import AgentConfigurationError, AgentsError
from agents.memory import (
    InvalidMemory,
    MemoryFull,
    MemoryNamespace,
    MemoryStore,
    SqliteMemoryStore,
    default_memory_path,
    memory_store_from_env,
)

U1 = MemoryNamespace("u1")
U2 = MemoryNamespace("u2")


MakeStore = Callable[..., MemoryStore]  # the make_memory_store fixture (tests/agents/conftest.py)


@pytest.fixture
def store(make_memory_store: MakeStore) -> MemoryStore:
    """A store of each backend holding at most 5 items a namespace."""
    return make_memory_store(max_items=5)


def test_public_names_are_pinned() -> None:
    assert sorted(memory.__all__) == [
        "ConversationMemoryProvider", "DEFAULT_MAX_ITEMS", "InvalidMemory", "MAX_LIST_LIMIT",
        "MAX_QUERY_CHARS", "MAX_SEARCH_LIMIT",
        "MAX_TEXT_CHARS", "MEMORY_CONNECTION_ENV", "MEMORY_CURSOR_PATTERN", "MEMORY_PATH_ENV",
        "MEMORY_STORE_ENV", "MEMORY_TABLE_ENV", "MemoryCursor", "MemoryFull", "MemoryHit", "MemoryItem",
        "MemoryNamespace", "MemoryPage", "MemorySettings", "MemoryStore", "MemoryStoreError",
        "SUMMARY_INSTRUCTIONS", "SqliteMemoryStore", "TableMemoryStore",
        "UserMemoryProvider",
        "default_memory_path", "memory_store_from_env", "use_memory_settings",
    ]
    assert issubclass(memory.MemoryStoreError, AgentsError)


async def test_put_get_update_delete(store: MemoryStore) -> None:
    item = await store.put(U1, "  Prefers aisle seats ", metadata={"k": [1]}, source_session="s-1")
    assert item.text == "Prefers aisle seats" and item.source_session == "s-1"
    got = await store.get(U1, item.id)
    assert got == item
    updated = await store.put(U1, "Prefers window seats", item_id=item.id)
    assert updated.created_at == item.created_at and updated.updated_at >= item.updated_at
    assert (await store.get(U1, item.id)).text == "Prefers window seats"  # type: ignore[union-attr]
    assert await store.delete(U1, item.id) is True
    assert await store.get(U1, item.id) is None
    assert await store.delete(U1, item.id) is False


async def test_upsert_creates_with_the_id_once_then_replaces(store: MemoryStore) -> None:
    first = await store.put(U1, "summary one", item_id="summary-abc", upsert=True, metadata={"n": 1})
    again = await store.put(U1, "summary two", item_id="summary-abc", upsert=True, metadata={"n": 2})
    assert first.id == again.id == "summary-abc" and again.created_at == first.created_at
    [hit] = await store.search(U1, "")
    assert (hit.item.text, hit.item.metadata) == ("summary two", {"n": 2})
    assert await store.get(U2, "summary-abc") is None  # another user's namespace has none
    for n in range(4):
        await store.put(U1, f"fact {n}")
    with pytest.raises(MemoryFull):  # an upsert that creates counts towards the limit
        await store.put(U1, "one too many", item_id="summary-new", upsert=True)
    await store.put(U1, "replacing fits", item_id="summary-abc", upsert=True)
    with pytest.raises(InvalidMemory):
        await store.put(U1, "not there", item_id="summary-new")  # without upsert: replace only


async def test_namespaces_never_mix(store: MemoryStore) -> None:
    item = await store.put(U1, "u1 likes tea")
    agent_item = await store.put(MemoryNamespace("u1", "concierge"), "concierge only")
    assert await store.get(U2, item.id) is None
    assert await store.delete(U2, item.id) is False
    assert await store.search(U2, "tea") == []
    assert [h.item.id for h in await store.search(U1, "")] == [item.id]
    assert [h.item.text for h in await store.search(MemoryNamespace("u1", "concierge"))] == ["concierge only"]
    with pytest.raises(InvalidMemory):
        await store.put(U2, "steal", item_id=item.id)  # no item of u2's with that id
    assert (await store.get(U1, item.id)).text == "u1 likes tea"  # type: ignore[union-attr]
    assert agent_item.namespace.agent == "concierge"


async def test_keyword_search_ranks_by_shared_words_then_newest(store: MemoryStore) -> None:
    await store.put(U1, "Travels to Lisbon in May")
    tea = await store.put(U1, "Drinks green tea, never coffee")
    both = await store.put(U1, "Green tea in Lisbon cafés")
    hits = await store.search(U1, "green TEA lisbon")
    assert [h.item.id for h in hits][:2] == [both.id, tea.id]
    assert hits[0].score == 1.0
    assert await store.search(U1, "zebra") == []
    newest = await store.search(U1, "", limit=2)
    assert [h.item.id for h in newest] == [both.id, tea.id]


async def test_semantic_search_uses_embeddings(store: MemoryStore) -> None:
    north = await store.put(U1, "north", embedding=[1.0, 0.0])
    east = await store.put(U1, "east", embedding=[0.0, 1.0])
    await store.put(U1, "no vector")
    hits = await store.search(U1, "", embedding=[0.9, 0.1])
    assert [h.item.id for h in hits] == [north.id, east.id]
    assert hits[0].score > 0.99 and (await store.get(U1, north.id)).embedding == (1.0, 0.0)  # type: ignore[union-attr]
    # Another model's dimensions: back to the words.
    assert [h.item.text for h in await store.search(U1, "vector", embedding=[1.0, 0.0, 0.0])] == ["no vector"]
    assert east.embedding == (0.0, 1.0)


@pytest.mark.parametrize(
    "bad",
    [
        {"text": ""},
        {"text": "   "},
        {"text": "x" * 4_001},
        {"text": "\ud800 lone"},
        {"text": "ok", "metadata": {"x": float("nan")}},
        {"text": "ok", "metadata": {"x": "y" * 5_000}},
        {"text": "ok", "embedding": []},
        {"text": "ok", "embedding": [float("inf")]},
        {"text": "ok", "source_session": "a/b"},
        {"text": "ok", "item_id": "../x"},
    ],
)
async def test_bad_items_are_refused_and_store_nothing(store: MemoryStore, bad: dict[str, Any]) -> None:
    bad = dict(bad)  # the parameter is shared by both backends' runs
    text = bad.pop("text")
    with pytest.raises(InvalidMemory):
        await store.put(U1, text, **bad)
    assert await store.search(U1) == []


@pytest.mark.parametrize("user", ["", "a/b", ".", "..", "x" * 129, "é", "a b"])
def test_bad_namespaces_are_refused(user: str) -> None:
    with pytest.raises(InvalidMemory):
        MemoryNamespace(user)
    with pytest.raises(InvalidMemory):
        MemoryNamespace("u1", user)


async def test_a_full_namespace_refuses_more(store: MemoryStore) -> None:
    for n in range(5):
        await store.put(U1, f"fact {n}")
    with pytest.raises(MemoryFull):
        await store.put(U1, "one too many")
    await store.put(U2, "another user is not affected")
    first = (await store.search(U1, "fact"))[0]
    await store.put(U1, "replacing stays within the limit", item_id=first.item.id)
    with pytest.raises(InvalidMemory):
        await store.search(U1, limit=0)
    # Forgetting frees a place, once.
    assert await store.delete(U1, first.item.id) is True
    assert await store.delete(U1, first.item.id) is False
    await store.put(U1, "fits again")
    with pytest.raises(MemoryFull):
        await store.put(U1, "one too many again")
    assert len(await store.search(U1, limit=10)) == 5


async def test_puts_racing_to_the_limit_never_pass_it(make_memory_store: MakeStore) -> None:
    # Two instances of the app (two stores on one file or table) write one user's memory at once.
    one, two = make_memory_store(max_items=6), make_memory_store(max_items=6)
    for n in range(3):
        await one.put(U1, f"already here {n}")
    stored: list[Any] = []
    for free in (3, 2):
        for item in stored[:free]:  # the second round: make room for two
            assert await one.delete(U1, item.id)
        racers = [store.put(U1, f"racer {n}") for n, store in enumerate([one, two] * 3)]
        results = await asyncio.gather(*racers, return_exceptions=True)
        stored = [r for r in results if not isinstance(r, BaseException)]
        refused = [r for r in results if isinstance(r, MemoryFull)]
        assert (len(stored), len(refused)) == (free, 6 - free), results
        assert len(await two.search(U1, limit=10)) == 6


async def test_the_largest_embedding_is_kept_exactly(store: MemoryStore) -> None:
    vector = [((n * 7919) % 1000) / 997.0 - 0.5 for n in range(8_192)]
    vector[0] = 1 / 3  # not representable in float32: the value comes back exactly
    item = await store.put(U1, "wide", embedding=vector, metadata={"m": "x" * 4_000})
    await store.put(U1, "another model", embedding=[1.0, 2.0])
    got = await store.get(U1, item.id)
    assert got is not None and got.embedding == tuple(vector) and got.metadata == {"m": "x" * 4_000}
    [hit] = await store.search(U1, embedding=vector, limit=5)
    assert hit.item.id == item.id and hit.score == pytest.approx(1.0)
    [by_word] = await store.search(U1, "wide")  # a keyword hit still carries its embedding
    assert by_word.item.embedding == tuple(vector)
    with pytest.raises(InvalidMemory):
        await store.put(U1, "too wide", embedding=[0.5] * 8_193)


async def test_ids_that_break_the_rule_are_not_found(store: MemoryStore) -> None:
    await store.put(U1, "kept")
    for bad in ("", "a/b", "!count", "x'y", "a#b", "a?b", "..", "\u0001"):
        assert await store.get(U1, bad) is None
        assert await store.delete(U1, bad) is False
    assert [h.item.text for h in await store.search(U1)] == ["kept"]


def test_the_file_is_its_owners_alone(tmp_path: pathlib.Path) -> None:
    SqliteMemoryStore(tmp_path / "m.db")
    assert stat.S_IMODE(os.stat(tmp_path / "m.db").st_mode) == 0o600


def test_default_path_is_in_the_hosts_data_dir_and_private(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEVHOST_DATA_DIR", str(tmp_path / "data"))
    assert default_memory_path() == tmp_path / "data" / "memory" / "memory.db"
    monkeypatch.delenv("DEVHOST_DATA_DIR")
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    path = default_memory_path()
    assert path.is_relative_to(tmp_path / "tmp")
    path.parent.parent.mkdir(parents=True, mode=0o777)
    os.chmod(path.parent.parent, 0o777)  # a folder others may write to is refused
    monkeypatch.setattr(memory._settings, "_default", None)
    monkeypatch.setattr(memory._settings, "_configured", None)  # no host's settings: the environment's
    with pytest.raises(AgentConfigurationError):
        memory_store_from_env()
    os.chmod(path.parent.parent, 0o700)
    store = memory_store_from_env()
    assert isinstance(store, SqliteMemoryStore) and store.path == path
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    monkeypatch.setattr(memory._settings, "_default", None)


def test_in_azure_without_a_named_store_memory_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory._settings, "_default", None)
    monkeypatch.setattr(memory._settings, "_configured", None)
    monkeypatch.delenv("AzureWebJobsStorage", raising=False)
    monkeypatch.delenv("DURABLE_AGENTS_MEMORY_PATH", raising=False)
    monkeypatch.setenv("WEBSITE_INSTANCE_ID", "abc")
    with pytest.raises(AgentConfigurationError, match="DURABLE_AGENTS_MEMORY_STORE=table"):
        memory_store_from_env()
