"""One value per running event loop: the home of every client cache.

Async clients (httpx pools, aiohttp sessions, the Azure SDKs' aio clients, redis-py's pools) belong
to the loop that opened them, and the hosting package runs one loop per entity thread besides the
worker's own, so each of those clients is made once per loop and never shared across loops. A
loop's values go with the loop (weak keys), and an entry of a loop that was closed but is still
referenced is dropped whenever a new one is made.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerLoop(Generic[T]):
    """A value of each running event loop, thread-safe (loops on other threads share the map)."""

    def __init__(self) -> None:
        self._values: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def __contains__(self, loop: object) -> bool:
        with self._lock:
            return loop in self._values

    def get(self) -> T | None:
        """The running loop's value, if it has one."""
        loop = asyncio.get_running_loop()
        with self._lock:
            return self._values.get(loop)

    def setdefault(self, value: T) -> T:
        """The running loop's value, `value` if it had none (for a value made with an `await`:
        another task of the loop may have stored one meanwhile; the caller closes its own then)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            found = self._values.get(loop)
            if found is not None:
                return found
            for dead in [other for other in self._values if other.is_closed()]:
                del self._values[dead]
            self._values[loop] = value
            return value

    def get_or_make(self, make: Callable[[], T], usable: Callable[[T], bool] | None = None) -> T:
        """The running loop's value, made by `make` (on the loop, under the lock) when it has none
        or `usable` says its value can no longer be used."""
        loop = asyncio.get_running_loop()
        with self._lock:
            found = self._values.get(loop)
            if found is not None and (usable is None or usable(found)):
                return found
            for dead in [other for other in self._values if other.is_closed()]:
                del self._values[dead]
            made = self._values[loop] = make()
            return made

    def pop(self) -> T | None:
        """Remove and return the running loop's value (to close it before the loop closes)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            return self._values.pop(loop, None)
