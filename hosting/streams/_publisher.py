"""The entity side: a running turn's events into the stream store, framed by run.* events.

`RunEvents` is what `AgentEntity` uses: `begin()` writes `run.started` (or `run.restarted` when an
earlier attempt of the same run left events behind: the turn was redelivered after a crash), the
turn's `TurnEvent`s follow through `sink`, and `finish(result)` writes exactly one terminal event.
Publishing never fails a turn: a store error is logged and the rest of the run is not published
(readers then take the final answer from the stored state).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from agents import FailureCode, TurnEvent, TurnEventSink, TurnResult, failure

from .._loop import run_sync
from ._store import (
    APPROVAL_REQUIRED,
    RUN_CANCELLED,
    RUN_COMPLETED,
    RUN_FAILED,
    RUN_RESTARTED,
    RUN_STARTED,
    STEP_STARTED,
    StreamEvent,
    StreamKey,
    StreamStore,
)

log = logging.getLogger("hosting.streams")
T = TypeVar("T")

CANCEL_CHECK_SECONDS = 0.25
"""How often a running step asks the store whether its run was cancelled: a model call in flight
is abandoned well within a second of the cancel."""


class RunCancelled(Exception):
    """The run was asked to stop (`StreamStore.request_cancel`) while its step ran; the step's
    work was abandoned."""


def terminal_type(result: dict[str, Any]) -> str:
    """The terminal event of a run's result (`TurnResult.to_json()`)."""
    if result.get("status") == "succeeded":
        return RUN_COMPLETED
    error = result.get("error")
    cancelled = isinstance(error, dict) and error.get("code") == FailureCode.CANCELLED
    return RUN_CANCELLED if cancelled else RUN_FAILED


class RunEvents:
    """Publishes one attempt of one run; the single writer of its stream while it runs."""

    def __init__(self, store: StreamStore | None, key: StreamKey) -> None:
        self.store = store
        self.key = key
        self.seq = 0
        self.live = False
        """Whether the model is streamed and every event published: unless the run's claim says
        otherwise (a JSON `POST` that waits for its own answer; see docs/streaming.md). Runs that
        are not live publish their first and final events only."""
        self._pending: list[StreamEvent] = []
        self._flusher: asyncio.Task[None] | None = None
        self._opening = False
        self._resume: tuple[int, int] | None = None
        """(step, the stream's sequence number when the step before it ended): a later step of a
        turn continues the stream its earlier steps wrote."""

    def _enqueue(self, kind: str, data: dict[str, Any]) -> None:
        """Number the event and hand it to the flusher; the turn does not wait for the store.
        What arrives while a write is in flight goes out together in the next one."""
        if self.store is None:
            return
        self.seq += 1
        self._pending.append(StreamEvent(self.seq, kind, data))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        while self._pending and self.store is not None:
            batch, self._pending = self._pending, []
            try:
                await self.store.append_many(self.key, batch)
            except Exception:
                log.exception("could not publish events of run %s; the rest is not streamed", self.key)
                self.store = None
                self._pending = []

    async def _drain(self) -> None:
        """Wait until everything enqueued is stored (before the entity operation returns)."""
        while self._flusher is not None and not self._flusher.done():
            await self._flusher

    async def _started(self) -> None:
        """Do `begin`'s work, first thing on the turn loop."""
        if self._opening:
            self._opening = False
            await self._begin()

    async def _put(self, kind: str, data: dict[str, Any]) -> None:
        await self._started()
        self._enqueue(kind, data)
        await self._drain()

    async def streaming(self, turn: Callable[[TurnEventSink | None], Awaitable[T]]) -> T:
        """Run `turn(sink)` and wait for its events to be stored."""
        await self._started()
        try:
            return await turn(self.sink)
        finally:
            await self._drain()

    async def stoppable(self, work: Awaitable[T]) -> T:
        """`work`, abandoned with `RunCancelled` once the run's cancel is asked for in the store
        (checked before it starts, then every `CANCEL_CHECK_SECONDS`)."""
        task = asyncio.ensure_future(work)
        try:
            while True:
                if await self._cancel_asked():
                    raise RunCancelled(self.key.text())
                done, _ = await asyncio.wait({task}, timeout=CANCEL_CHECK_SECONDS)
                if done:
                    return task.result()
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task

    async def _cancel_asked(self) -> bool:
        store = self.store
        if store is None:
            return False
        try:
            if await store.cancel_requested(self.key):
                return True
            # A run sent with multitask_strategy "interrupt" marks the whole session.
            return await store.cancel_requested(StreamKey.interrupt(self.key.agent, self.key.session_id))
        except Exception:
            # An unreachable store: the cancel is still delivered between steps by the entity.
            log.warning("run %s: could not check for a cancel", self.key, exc_info=True)
            return False

    async def _begin(self) -> None:
        if self.store is None:
            return
        try:
            # Read together: with Redis one round trip before the model request.
            claim, last = await self.store.opening(self.key)
            self.live = claim is None or claim.live
        except Exception:
            log.exception("stream store unreachable; run %s is not streamed", self.key)
            self.store = None
            return
        if last is not None and last.terminal:
            # A closed stream and yet the run is executed: the session was reset or deleted and
            # the id is used again (or the host died between publishing the answer and storing
            # it). Either way this attempt's events are the run's now: start the stream afresh.
            log.warning("run %s is executed again after its stream closed; restarting its stream", self.key)
            try:
                await self.store.discard(self.key)
            except Exception:
                log.exception("could not restart the stream of run %s; it is not streamed", self.key)
                self.store = None
                return
            last = None
        if self._resume is not None and last is not None:
            self._continue(last.seq)
            return
        if last is None:
            # Not awaited: the model request starts while it is stored (`streaming` and
            # `finish` drain the queue in order before the operation returns).
            self._enqueue(RUN_STARTED, self._identity())
        else:
            self.seq = last.seq
            self._enqueue(RUN_RESTARTED, {"reason": "redelivered", "after": last.seq, "step": 0})

    def _identity(self) -> dict[str, Any]:
        """`run.started`'s data: the run's ids."""
        key = self.key
        return {"agent": key.agent, "session_id": key.session_id, "correlation_id": key.correlation_id}

    def _continue(self, last_seq: int) -> None:
        """Open a later step: `step.started`, or `run.restarted` naming the step when an attempt
        of this step published events and died (they are void: the step is done again)."""
        assert self._resume is not None
        step, recorded = self._resume
        self.seq = last_seq
        if last_seq > recorded:
            self._enqueue(RUN_RESTARTED, {"reason": "redelivered", "after": last_seq, "step": step})
        else:
            self._enqueue(STEP_STARTED, {"step": step})

    @property
    def sink(self) -> TurnEventSink | None:
        """The turn's `agents.TurnEventSink`; None when the run is not streamed live."""
        return self._publish if self.live and self.store is not None else None

    async def _publish(self, event: TurnEvent) -> None:
        self._enqueue(str(event.type), dict(event.data))

    def begin(self) -> None:
        """Open the attempt (called from the entity function). The work is done by `streaming` or
        `finish`, whichever comes first, in the same trip to the turn loop: a hop of its own
        would cost the model request two more thread hand-offs."""
        self._opening = True

    def begin_step(self, step: int, recorded_seq: int) -> None:
        """Open step `step` of the run (0: its first, as `begin`); `recorded_seq` is the stream's
        sequence number the turn recorded when its step before ended."""
        self._resume = (step, recorded_seq) if step > 0 else None
        self.begin()

    def finish(self, result: dict[str, Any]) -> None:
        """Close the stream with the turn's result (`TurnResult.to_json()`)."""
        run_sync(lambda: self._put(terminal_type(result), result))

    def approval_required(self, seq: int, data: dict[str, Any]) -> None:
        """The turn paused: its next step's calls wait for decisions (not a terminal event).
        Published once the pause is committed, as event `seq`, the number the pause reserved
        for it; the stream's last event must be the one before (an announcement run again after
        it was published, or one the stream moved past, publishes nothing)."""
        run_sync(lambda: self._announce(seq, data))

    async def _read_last(self, otherwise: str) -> tuple[bool, StreamEvent | None]:
        """The stream's last event; False first when there is no store or it cannot be read
        (then `otherwise`, what is not done, is logged)."""
        if self.store is None:
            return False, None
        try:
            return True, await self.store.last(self.key)
        except Exception:
            log.warning("run %s: stream store unreachable; %s", self.key, otherwise, exc_info=True)
            return False, None

    async def _announce(self, seq: int, data: dict[str, Any]) -> None:
        read, last = await self._read_last("no approval.required")
        if not read or last is None or last.terminal or last.seq != seq - 1:
            return
        self.seq = last.seq
        self._enqueue(APPROVAL_REQUIRED, data)
        await self._drain()

    def withdraw_interrupt(self) -> None:
        """Forget the session's interrupt mark: the interrupting run has reached its session, so
        its own steps and the runs after it are not stopped by it."""
        store = self.store
        if store is None:
            return
        mark = StreamKey.interrupt(self.key.agent, self.key.session_id)
        try:
            run_sync(lambda: store.withdraw_cancel(mark))
        except Exception:
            log.warning("run %s: could not withdraw the session's interrupt mark", self.key, exc_info=True)

    def close(self, result: dict[str, Any]) -> None:
        """Close the stream of a run that ended between its steps (cancelled while queued or
        between two steps): its terminal event after the last stored one, unless it has one."""
        run_sync(lambda: self._close(result))

    async def _close(self, result: dict[str, Any]) -> None:
        read, last = await self._read_last("its stream is not closed")
        if not read:
            return
        if last is not None and last.terminal:
            return
        if last is None:
            self._enqueue(RUN_STARTED, self._identity())
        else:
            self.seq = last.seq
        self._enqueue(terminal_type(result), result)
        await self._drain()

    def fail(self, code: str, message: str) -> None:
        """Close the stream with a failure the turn could not record (the operation raised)."""
        failed = TurnResult(self.key.correlation_id, "failed", error=failure(code, message))
        self.finish(failed.to_json())
