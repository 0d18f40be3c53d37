"""`agents.PerLoop`: one value per event loop, the home of every client cache."""

from __future__ import annotations

import asyncio
import threading

from agents import PerLoop


def test_each_loop_has_its_own_value_made_once() -> None:
    values: PerLoop[list[int]] = PerLoop()
    made: list[list[int]] = []

    def make() -> list[int]:
        made.append([len(made)])
        return made[-1]

    async def twice() -> tuple[list[int], list[int]]:
        return values.get_or_make(make), values.get_or_make(make)

    first = asyncio.run(twice())
    second = asyncio.run(twice())
    assert first[0] is first[1] and second[0] is second[1]
    assert first[0] is not second[0] and len(made) == 2


def test_a_closed_loops_value_is_dropped_when_another_is_made() -> None:
    values: PerLoop[str] = PerLoop()
    loop = asyncio.new_event_loop()

    async def put(value: str) -> str:
        return values.get_or_make(lambda: value)

    assert loop.run_until_complete(put("old")) == "old"
    loop.close()
    assert loop in values  # still referenced here, so the weak key alone would keep it
    assert asyncio.run(put("new")) == "new"
    assert loop not in values


def test_an_unusable_value_is_made_again() -> None:
    values: PerLoop[dict[str, bool]] = PerLoop()

    async def run() -> None:
        first = values.get_or_make(lambda: {"open": True})
        first["open"] = False
        second = values.get_or_make(lambda: {"open": True}, usable=lambda v: v["open"])
        assert second is not first and second["open"]
        assert values.get() is second

    asyncio.run(run())


def test_setdefault_keeps_the_first_value_and_pop_removes_it() -> None:
    values: PerLoop[str] = PerLoop()

    async def run() -> None:
        assert values.get() is None
        assert values.setdefault("a") == "a"
        assert values.setdefault("b") == "a"  # another task stored one first: the caller closes its own
        assert values.pop() == "a"
        assert values.get() is None and values.pop() is None

    asyncio.run(run())


def test_loops_on_threads_do_not_share_values() -> None:
    values: PerLoop[object] = PerLoop()
    seen: list[object] = []

    def worker() -> None:
        async def run() -> None:
            seen.append(values.get_or_make(object))

        asyncio.run(run())

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(v) for v in seen}) == 4
