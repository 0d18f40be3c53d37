"""In-process wakeups of callers waiting for a run, and the pauses between their reads."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from hosting._wakeup import (
    runs_operations,
    session_operation,
    session_quiet,
    session_running,
    session_topic,
    start_waiter,
    waiter,
)
from hosting.client._pacing import (
    FIRST_DELAY,
    MAX_DELAY,
    POLL_DELAY,
    RUNNING_DELAY,
    SENT_DELAY,
    SETTLE_DELAY,
    TIMER_RESOLUTION,
    WAITED_SHARE,
    ReadPacer,
    read_pacer,
)


async def test_an_operation_ending_on_another_thread_wakes_its_sessions_waiters_only() -> None:
    topic = session_topic("dafx-Assistant", "s-1")
    other = session_topic("dafx-assistant", "s-2")
    seen_running: list[bool] = []
    release = threading.Event()

    def operation() -> None:
        with session_operation("dafx-assistant", "s-1"):
            seen_running.append(session_running(topic))
            release.wait(10)

    with waiter(topic) as woken, waiter(other) as bystander:
        thread = threading.Thread(target=operation)
        thread.start()
        try:
            while not seen_running:
                await asyncio.sleep(0.001)
            assert session_running(topic) and not session_running(other)
            assert not woken.is_set()  # an operation starting wakes nobody
        finally:
            release.set()
            thread.join(10)
        await asyncio.wait_for(woken.wait(), 10)
        await asyncio.sleep(0.01)
        assert not bystander.is_set()
    assert seen_running == [True]
    assert not session_running(topic)


async def test_an_operation_that_raises_still_wakes_and_is_no_longer_running() -> None:
    topic = session_topic("dafx-assistant", "s-raise")
    with waiter(topic) as woken:
        with pytest.raises(RuntimeError), session_operation("dafx-assistant", "s-raise"):
            raise RuntimeError("the entity failed")
        await asyncio.wait_for(woken.wait(), 10)
    assert not session_running(topic)


async def test_without_news_reads_back_off_to_a_share_of_the_time_waited() -> None:
    pacer = ReadPacer(session_topic("dafx-assistant", "s-poll"), asyncio.Event(), asyncio.Event())
    delays = [pacer.next_delay() for _ in range(7)]
    assert delays == [FIRST_DELAY * 2**i for i in range(5)] + [POLL_DELAY, POLL_DELAY]
    pacer.started = time.monotonic() - 2.0  # two seconds into the wait
    assert pacer.next_delay() == pytest.approx(2.0 * WAITED_SHARE, rel=0.05)
    pacer.started = time.monotonic() - 60.0
    assert pacer.next_delay() == MAX_DELAY


async def test_while_the_session_runs_here_only_a_safety_read_and_after_it_ends_a_quick_one() -> None:
    topic = session_topic("dafx-assistant", "s-run")
    with waiter(topic) as woken:
        pacer = ReadPacer(topic, woken, asyncio.Event())
        pacer.reading()
        with session_operation("dafx-assistant", "s-run"):
            assert pacer.next_delay() == RUNNING_DELAY
        await asyncio.wait_for(woken.wait(), 10)
        pacer.reading()  # woken: the host commits the operation's batch right after
        assert not woken.is_set()
        settling = [pacer.next_delay() for _ in range(10)]
    assert settling[:4] == [SETTLE_DELAY, 2 * SETTLE_DELAY, 4 * SETTLE_DELAY, 8 * SETTLE_DELAY]
    assert all(delay <= MAX_DELAY for delay in settling) and POLL_DELAY in settling


async def test_a_wakeup_during_a_read_makes_the_next_read_quick_even_if_another_operation_runs() -> None:
    topic = session_topic("dafx-assistant", "s-next")
    with waiter(topic) as woken:
        pacer = ReadPacer(topic, woken, asyncio.Event())
        pacer.reading()
        with session_operation("dafx-assistant", "s-next"):
            woken.set()  # the previous operation ended while we read; the next one started
            assert pacer.next_delay() == SETTLE_DELAY


async def test_an_operation_starting_wakes_only_the_start_waiters() -> None:
    topic = session_topic("dafx-assistant", "s-start")
    with waiter(topic) as ended, start_waiter(topic) as started:
        with session_operation("dafx-assistant", "s-start"):
            await asyncio.wait_for(started.wait(), 10)
            await asyncio.sleep(0.01)
            assert not ended.is_set()
        await asyncio.wait_for(ended.wait(), 10)


async def test_a_caller_that_just_sent_the_turn_pauses_once_before_polling() -> None:
    pacer = ReadPacer(session_topic("dafx-assistant", "s-sent"), asyncio.Event(), asyncio.Event())
    pacer.sent()
    assert pacer.next_delay() == SENT_DELAY
    assert pacer.next_delay() == FIRST_DELAY  # then polling as before


async def test_a_sender_woken_by_its_turn_re_reads_within_milliseconds_not_after_the_sent_pause() -> None:
    # The usual waiting turn: sent, watched, woken by the turn's end before its first read, which
    # still sees the state before the host's commit. The re-read is the settle delay; the pause a
    # sender takes when nothing has happened yet is over (it once cost such turns 100 ms).
    topic = session_topic("dafx-assistant", "s-sent-woken")
    with waiter(topic) as woken:
        pacer = ReadPacer(topic, woken, asyncio.Event())
        pacer.sent()
        pacer.watched = True
        assert pacer.next_delay() == RUNNING_DELAY  # the first pause: until the wakeup
        pacer.watch_ended()  # the run's terminal event
        pacer.reading()
        assert pacer.next_delay() == SETTLE_DELAY
        assert pacer.next_delay() == 2 * SETTLE_DELAY


async def test_a_turn_starting_here_during_a_pause_turns_it_into_the_safety_wait() -> None:
    # The turn was queued when the pause began (a poll would be due soon); it starts here, so the
    # pause goes on until its end wakes the caller, with no read in between.
    release = threading.Event()

    def operation() -> None:
        with session_operation("dafx-assistant", "s-queued"):
            release.wait(10)

    with read_pacer("dafx-assistant", "s-queued") as pacer:
        pacer.reading()
        thread = threading.Thread(target=operation)
        started = time.monotonic()
        pause = asyncio.ensure_future(pacer.pause(60.0))
        await asyncio.sleep(0)
        thread.start()
        await asyncio.sleep(SENT_DELAY + 0.2)  # long past the first poll (FIRST_DELAY)
        assert not pause.done()
        release.set()
        await asyncio.wait_for(pause, 10)
        thread.join(10)
        assert pacer.woken.is_set() and time.monotonic() - started < RUNNING_DELAY


async def test_a_pause_ends_when_its_read_is_due_without_news() -> None:
    with read_pacer("dafx-assistant", "s-due") as pacer:
        pacer.reading()
        started = time.monotonic()
        await pacer.pause(60.0)
        assert time.monotonic() - started < 0.5 and not pacer.woken.is_set()


async def test_a_pause_ended_by_the_operations_end_lets_the_host_commit_before_the_read() -> None:
    # The entity's end wakes the caller before the host has the batch's answer, let alone its
    # commit: reading at once would only see the state before (one more read per turn).
    with read_pacer("dafx-assistant", "s-ended") as pacer:
        pacer.reading()
        with session_operation("dafx-assistant", "s-ended"):
            pause = asyncio.ensure_future(pacer.pause(60.0))
            await asyncio.sleep(0.01)
            assert not pause.done()  # the operation runs: only its end (or the safety read) is news
        ended = time.monotonic()
        await asyncio.wait_for(pause, 10)
        assert time.monotonic() - ended >= SETTLE_DELAY and pacer.woken.is_set()

T = TypeVar("T")


class _CountingExecutor(concurrent.futures.ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.sleeps: list[float] = []

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[T]:
        if fn is time.sleep:
            self.sleeps.append(args[0])
        return super().submit(fn, *args, **kwargs)


async def test_the_settle_after_a_wakeup_is_slept_on_a_thread_not_the_loops_millisecond_timer() -> None:
    # The loop's selector rounds a timer's timeout up to whole milliseconds: a 0.3 ms settle on it
    # would last over 1 ms, longer than the commit it waits for takes.
    assert SETTLE_DELAY < TIMER_RESOLUTION
    loop = asyncio.get_running_loop()
    executor = _CountingExecutor()
    loop.set_default_executor(executor)
    try:
        with read_pacer("dafx-assistant", "s-precise") as pacer:
            pacer.reading()
            with session_operation("dafx-assistant", "s-precise"):
                pause = asyncio.ensure_future(pacer.pause(60.0))
                await asyncio.sleep(0.01)
            ended = time.monotonic()
            await asyncio.wait_for(pause, 10)
            assert time.monotonic() - ended >= SETTLE_DELAY
            assert executor.sleeps == [SETTLE_DELAY]
            # A read that came before the commit: the settle goes on doubling, on the thread too.
            pacer.reading()
            await pacer.pause(60.0)
            await pacer.pause(60.0)
            assert executor.sleeps == [SETTLE_DELAY, SETTLE_DELAY, 2 * SETTLE_DELAY]
        # A poll's pause (milliseconds) stays on the loop's timer.
        with read_pacer("dafx-assistant", "s-polled") as polled:
            polled.reading()
            await polled.pause(0.02)
            assert not polled.settling and executor.sleeps == [SETTLE_DELAY, SETTLE_DELAY, 2 * SETTLE_DELAY]
    finally:
        executor.shutdown(wait=True)


async def test_a_session_is_quiet_here_once_no_operation_of_it_ran_here_for_the_time_asked() -> None:
    topic = session_topic("dafx-agent", "quiet")
    started, release = threading.Event(), threading.Event()

    def operation() -> None:
        with session_operation("dafx-agent", "quiet"):
            started.set()
            release.wait(5)

    running = asyncio.create_task(asyncio.to_thread(operation))
    await asyncio.to_thread(started.wait, 5)
    quiet = asyncio.create_task(session_quiet(topic, 0.05))
    await asyncio.sleep(0.3)
    assert not quiet.done()  # six times the quiet asked for, but the operation still runs here
    release.set()
    await running
    await asyncio.wait_for(quiet, 5)
    assert not session_running(topic)


async def test_a_process_that_never_ran_an_operation_has_no_quiet_to_wait_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The flex topology's HTTP group (Flex Consumption's HTTP instances): no entity ever runs
    # there, so a terminal watch follows the stream at once, as before the quiet existed.
    monkeypatch.setattr("hosting._wakeup._ran_any", False)
    assert not runs_operations()
    await asyncio.wait_for(session_quiet(session_topic("dafx-agent", "http-only"), 60), 5)
    with session_operation("dafx-agent", "http-only"):
        pass
    assert runs_operations()
