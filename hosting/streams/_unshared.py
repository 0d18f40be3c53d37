"""The stream store of an app in Azure without Redis: none that readers could use.

In Azure an app runs on several instances (on Flex Consumption, HTTP and Durable functions always
on different ones), and a file on one instance reaches no other. Rather than streams that stay
silent, or 404 for a run that is pending on another instance, every read answers
`StreamStoreUnavailable` naming the setting (the HTTP edge: 503 `storage_unavailable`), and the
entity's writes go nowhere (no reader could see them). Run admission does not depend on it: a
request that does not stream sends its turn without a claim, and the entity runs a correlation id
once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from ._store import RunClaim, StreamEvent, StreamKey, StreamStoreUnavailable

MISSING = (
    "streaming needs a stream store that every instance of the app shares: set "
    "DURABLE_AGENTS_STREAM_REDIS to a Redis URL (the app runs in Azure: WEBSITE_INSTANCE_ID is set)"
)


class UnsharedStreamStore:
    """`StreamStore` that serves no reader (see the module)."""

    def __init__(self, retention: float) -> None:
        self.retention = retention

    def _missing(self) -> StreamStoreUnavailable:
        return StreamStoreUnavailable(MISSING, retry_after=None)

    async def declare(self, key: StreamKey) -> None:
        return None

    async def claim(self, key: StreamKey, claim: RunClaim, *, replace: bool = False) -> RunClaim | None:
        raise self._missing()

    async def claimed(self, key: StreamKey) -> RunClaim | None:
        return None

    async def opening(self, key: StreamKey) -> tuple[RunClaim | None, StreamEvent | None]:
        # Nobody can read the run: the entity need not stream the model for it.
        return RunClaim(None, live=False), None

    async def release(self, key: StreamKey) -> None:
        return None

    async def request_cancel(self, key: StreamKey) -> bool:
        # No store every instance shares: a cancel waits for the step in flight to end.
        return False

    async def cancel_requested(self, key: StreamKey) -> bool:
        return False

    async def withdraw_cancel(self, key: StreamKey) -> None:
        return None

    async def exists(self, key: StreamKey) -> bool:
        raise self._missing()

    async def append(self, key: StreamKey, event: StreamEvent) -> None:
        return None

    async def append_many(self, key: StreamKey, events: Sequence[StreamEvent]) -> None:
        return None

    async def last(self, key: StreamKey) -> StreamEvent | None:
        raise self._missing()

    async def discard(self, key: StreamKey) -> None:
        return None

    async def follow(self, key: StreamKey, after: int, idle: float) -> AsyncIterator[StreamEvent | None]:
        raise self._missing()
        yield None  # an async generator, like every store's follow

    async def ping(self) -> str:
        raise self._missing()

    async def aclose(self) -> None:
        return None
