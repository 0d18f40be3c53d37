"""A user's memory listed across their namespaces, on each backend (a real SQLite file, Azurite's
Table service): newest created first,
keyset pages that neither repeat nor skip while items change, keyword filtering, and nothing of
another user's; `find` reaches the user's items only."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agents.memory import (
    InvalidMemory,
    MemoryCursor,
    MemoryItem,
    MemoryNamespace,
    MemoryStore,
)

MakeStore = Callable[..., MemoryStore]  # the make_memory_store fixture (tests/agents/conftest.py)


@pytest.fixture
def store(make_memory_store: MakeStore) -> MemoryStore:
    return make_memory_store(max_items=50)


async def _all(store: MemoryStore, user: str, query: str = "", limit: int = 2) -> list[MemoryItem]:
    items: list[MemoryItem] = []
    after = None
    while True:
        page = await store.list_user(user, query, limit=limit, after=after)
        assert len(page.items) <= limit
        items += page.items
        if page.next is None:
            return items
        after = MemoryCursor.parse(str(page.next))


async def test_a_users_items_across_agents_newest_first_in_pages(store: MemoryStore) -> None:
    shared = await store.put(MemoryNamespace("u1"), "likes tea", embedding=[1.0, 0.0])
    own = await store.put(MemoryNamespace("u1", "concierge"), "aisle seats")
    other = await store.put(MemoryNamespace("u1", "writer"), "short sentences")
    await store.put(MemoryNamespace("u2"), "u2 likes tea")
    listed = await _all(store, "u1")
    assert [i.id for i in listed] == [other.id, own.id, shared.id]
    assert [i.namespace.agent for i in listed] == ["writer", "concierge", None]
    assert all(i.embedding is None for i in listed)  # vectors never travel with a listing
    assert [i.text for i in await _all(store, "u2")] == ["u2 likes tea"]
    assert await _all(store, "nobody") == []


async def test_pages_neither_repeat_nor_skip_while_items_change(store: MemoryStore) -> None:
    ns = MemoryNamespace("u1")
    made = [await store.put(ns, f"fact {n}") for n in range(5)]
    first = await store.list_user("u1", limit=2)
    assert [i.id for i in first.items] == [made[4].id, made[3].id] and first.next is not None
    await store.put(ns, "newer than the listing")  # lands before the cursor: not on later pages
    await store.put(ns, "fact 2 replaced", item_id=made[2].id)  # keeps its creation time: its place
    await store.delete(ns, made[1].id)
    rest = await store.list_user("u1", limit=10, after=first.next)
    assert [i.text for i in rest.items] == ["fact 2 replaced", "fact 0"] and rest.next is None


async def test_a_query_lists_only_items_holding_its_words(store: MemoryStore) -> None:
    ns = MemoryNamespace("u1", "concierge")
    tea = [await store.put(ns, f"green tea number {n}") for n in range(3)]
    for n in range(250):  # more than a batch of rows (200) between the matches and the start
        await store.put(MemoryNamespace("u1", f"a{n % 9}"), f"unrelated {n}")
    coffee = await store.put(ns, "black coffee")
    found = await _all(store, "u1", "TEA please", limit=2)
    assert [i.id for i in found] == [t.id for t in reversed(tea)]
    assert [i.id for i in await _all(store, "u1", "coffee")] == [coffee.id]
    assert await _all(store, "u1", "zebra") == []
    assert await _all(store, "u2", "tea") == []


async def test_find_reaches_the_users_own_items_only(store: MemoryStore) -> None:
    item = await store.put(MemoryNamespace("u1", "concierge"), "aisle seats", embedding=[0.5])
    found = await store.find("u1", item.id)
    assert found is not None and found.namespace == MemoryNamespace("u1", "concierge")
    assert found.text == "aisle seats" and found.embedding is None
    assert await store.find("u2", item.id) is None
    assert await store.find("u1", "0" * 32) is None


@pytest.mark.parametrize(
    "text",
    ["", "x" * 600, "not base64!", "YWJj", "bm8gbmV3bGluZXM", "é", "MjAyNgphCmI", "eA"],
)
def test_cursors_that_were_never_handed_out_are_refused(text: str) -> None:
    with pytest.raises(InvalidMemory):
        MemoryCursor.parse(text)


async def test_bad_listings_are_refused(store: MemoryStore) -> None:
    for bad in ({"limit": 0}, {"limit": 101}, {"limit": True}, {"query": "x" * 257}):
        with pytest.raises(InvalidMemory):
            await store.list_user("u1", **bad)
    for user in ("", "a/b", ".."):
        with pytest.raises(InvalidMemory):
            await store.list_user(user)
    with pytest.raises(InvalidMemory):
        await store.find("u1", "a@b")
