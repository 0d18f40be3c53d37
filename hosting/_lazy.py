"""Protocol edges whose SDKs load on their first request, not when the worker starts."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import azure.functions as func
from starlette.responses import Response as StarletteResponse

from ._handlers import Handler

Edge = TypeVar("Edge")


class LazyEdge(Generic[Edge]):
    """An edge built by ``build`` on the first request to any of its handlers.

    The protocol SDKs (openai's Responses types, a2a-sdk with protobuf, ag-ui-protocol) take about
    as long to import as the rest of the app together: imported at startup they doubled the time
    from `make run` to its first answer and every worker process's start (docs/bench.md "Time to
    ready"), for callers that mostly never speak those protocols. The first request to an edge pays
    for its import once per worker process; the lock keeps two first requests from building it twice.
    """

    def __init__(self, build: Callable[[], Edge]) -> None:
        self._build = build
        self._edge: Edge | None = None
        self._lock = threading.Lock()

    def edge(self) -> Edge:
        if self._edge is None:
            with self._lock:
                if self._edge is None:
                    self._edge = self._build()
        return self._edge

    def handler(self, method: Callable[[Edge], Handler]) -> Handler:
        """The handler ``method`` picks from the edge, e.g. ``lambda edge: edge.run``."""

        async def handle(req: func.HttpRequest, client: Any) -> func.HttpResponse | StarletteResponse:
            return await method(self.edge())(req, client)

        return handle
