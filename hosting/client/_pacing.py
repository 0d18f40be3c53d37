"""When a caller waiting for a run reads the session's state again.

Three cases, from what this process knows (`hosting._wakeup`):

* an operation of the session just ended here (the entity wrapper woke us): its batch is
  committed within milliseconds, so re-read after `SETTLE_DELAY`, doubling;
* an operation of the session is running here: its end will wake us, so only a safety read every
  `RUNNING_DELAY` (a slow model costs one read per waiting request every 5 s, not ten a second);
  an operation starting here during a pause turns that pause into such a wait;
* a watch on the run's terminal event (`watched`: the HTTP edge follows the run's event stream
  when a shared stream store is configured; the entity publishes the terminal event just before
  its batch commits): the event wakes us, so only a safety read every `RUNNING_DELAY`, as for an
  operation running here; a watch that ends without the event (the store failed) wakes us too,
  and polling resumes;
* nothing known (the turn is still queued, or the entity runs in another process or instance):
  poll, `FIRST_DELAY` doubling to `POLL_DELAY`, and from then on at most a quarter of the time
  waited so far, up to `MAX_DELAY`: a run finished elsewhere is seen at most 25 % (and 1 s) of
  its duration late, and a long wait costs a few reads a second instead of ten. A caller that
  has just sent the turn itself first waits `SENT_DELAY` (a turn that was only just queued is
  not done within a few milliseconds; one that starts here ends that pause).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator

from .._wakeup import session_running, session_topic, start_waiter, waiter

FIRST_DELAY = 0.004
"""Seconds before the first re-read after a signal (nothing known about the entity)."""
POLL_DELAY = 0.1
"""Gap between reads, once doubled up to it, until a quarter of the time waited is longer."""
MAX_DELAY = 1.0
"""Cap of the gap between reads while polling."""
RUNNING_DELAY = 5.0
"""Gap of the safety read while an operation of the session runs here (its end wakes us)."""
SENT_DELAY = POLL_DELAY
"""The first pause of a caller that has just sent the turn (`ReadPacer.sent`)."""
SETTLE_DELAY = 0.0003
"""Seconds before the re-read after the entity woke us (the host commits just after). Measured on
the local host with a worker process (docs/bench.md): the commit lands 0.6-1.4 ms after the
wakeup, and the read leaves the woken caller and reaches the host a few tenths of a millisecond
after its pause, so 0.3 ms reads once in all but ~1 % of turns (0.1 ms: ~9 % read twice)."""
TIMER_RESOLUTION = 0.001
"""The shortest pause an event loop's timer keeps: the selector rounds its timeout up to whole
milliseconds (CPython's selectors.EpollSelector.select), so `asyncio.sleep(0.0003)` lasts ~1.1 ms.
Shorter pauses are slept on a thread (`_pause_for`)."""
WAITED_SHARE = 0.25
"""A gap of polling is at most this share of the time waited so far (once past `POLL_DELAY`)."""


class ReadPacer:
    """The pauses between the reads of one wait for a run of the session `topic`."""

    def __init__(self, topic: str, woken: asyncio.Event, started: asyncio.Event) -> None:
        self.topic = topic
        self.woken = woken
        self.operation_started = started
        self.started = time.monotonic()
        self.delay = FIRST_DELAY / 2
        self.settling = False
        self.just_sent = False
        self.watched = False

    def watch_ended(self) -> None:
        """The watch on the run's terminal event is over (it came: re-read as the batch commits;
        or the store failed: reads settle, then poll again). The pause ends now."""
        self.watched = False
        # The commit is due any moment now: polling, if it comes to that, paces itself by the
        # time since the event, not since the wait began.
        self.started = time.monotonic()
        self.woken.set()

    def sent(self) -> None:
        """This caller has just sent the turn: the first pause is `SENT_DELAY`, not a poll."""
        self.just_sent = True

    def reading(self) -> None:
        """Call just before each read: a wakeup from now on means there is news after it."""
        if self.woken.is_set():
            self._settle()
        self.woken.clear()

    def _settle(self) -> None:
        # An operation of the session ended here: the host commits its batch right after.
        self.settling = True
        self.just_sent = False
        self.delay = SETTLE_DELAY / 2

    def next_delay(self) -> float:
        """Seconds until the next read (see the module docstring for the three cases)."""
        if self.woken.is_set():
            self._settle()  # it ended during the read
        elif not self.settling and (self.watched or session_running(self.topic)):
            return RUNNING_DELAY  # its end wakes us; this read is only a safety net
        elif self.just_sent:
            self.just_sent = False
            return SENT_DELAY
        self.delay = min(self.delay * 2, POLL_DELAY)
        if self.delay >= POLL_DELAY:
            # Settled without finding the run (another run of the session ended), or polling.
            self.settling = False
            elapsed = time.monotonic() - self.started
            self.delay = min(max(POLL_DELAY, elapsed * WAITED_SHARE), MAX_DELAY)
        return self.delay

    async def pause(self, remaining: float) -> None:
        """Wait until the next read is due (or a wakeup comes), at most `remaining` seconds."""
        now = time.monotonic()
        end = now + remaining
        delay = min(self.next_delay(), remaining)
        if self.woken.is_set() or (self.settling and delay < TIMER_RESOLUTION):
            # Settling: the commit is due within a millisecond, and nothing the pause could
            # hear of meanwhile would make the read later.
            await _pause_for(delay)
            return
        self.operation_started.clear()
        due = now + delay
        while (left := due - time.monotonic()) > 0:
            ended = asyncio.ensure_future(self.woken.wait())
            started = asyncio.ensure_future(self.operation_started.wait())
            try:
                await asyncio.wait((ended, started), timeout=left, return_when=asyncio.FIRST_COMPLETED)
            finally:
                ended.cancel()
                started.cancel()
            if self.woken.is_set():
                # The operation ended here (or its terminal event came): the host commits its
                # batch only once the answer has crossed back to it, so a read at once would
                # still see the state before; the first read waits as long as a settled one.
                await _pause_for(min(SETTLE_DELAY, max(0.0, end - time.monotonic())))
                return
            if not self.operation_started.is_set():
                return  # the read is due
            # An operation of the session started here: its end wakes us; until then only the
            # safety read is due.
            self.operation_started.clear()
            due = min(max(due, time.monotonic() + RUNNING_DELAY), end)


async def _pause_for(seconds: float) -> None:
    """Sleep `seconds`, below `TIMER_RESOLUTION` on a thread of the loop's default executor (a
    thread's sleep keeps tens of microseconds): the settle after a wakeup is a few tenths of a
    millisecond, which the loop's own timer would stretch to over one."""
    if 0 < seconds < TIMER_RESOLUTION:
        await asyncio.get_running_loop().run_in_executor(None, time.sleep, seconds)
    else:
        await asyncio.sleep(seconds)


@contextlib.contextmanager
def read_pacer(entity_name: str, key: str) -> Iterator[ReadPacer]:
    """The pacer of one wait for a run of the session `entity_name@key`, woken by its operations
    ending in this process for the `with` block."""
    topic = session_topic(entity_name, key)
    with waiter(topic) as woken, start_waiter(topic) as started:
        yield ReadPacer(topic, woken, started)
