"""Where a model call's reply comes from, in order: the first `ModelRoute` that matches it, the
script queue (FIFO), the `handler`, then the fallback of the server's mode (the offline answer, or
in scripted mode a 500 ``script_exhausted`` error that tells the client not to retry)."""

from __future__ import annotations

import inspect
import logging
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from ._offline import offline_reply
from ._replies import ModelRequest, Reply

log = logging.getLogger("agents.testing")

Mode = Literal["offline", "scripted"]
Handler = Callable[[ModelRequest], "Reply | Awaitable[Reply | None] | None"]


@dataclass(eq=False)
class ModelRoute:
    """Requests of one kind answered apart (`ModelServer.route`): a request `match` accepts is
    answered by `answer` and recorded in `requests`, never in `ModelServer.requests`, and it never
    takes a scripted reply. For calls a test does not drive (a background job of the host, such as
    a conversation summary) that could otherwise arrive during another test and take its reply."""

    name: str
    match: Callable[[ModelRequest], bool]
    answer: Callable[[ModelRequest], Reply | Awaitable[Reply]]
    requests: list[ModelRequest] = field(default_factory=list)


async def routed(routes: Iterable[ModelRoute], request: ModelRequest) -> Reply | None:
    """The answer of the first route matching `request` (recorded there), else None."""
    for candidate in routes:
        try:
            if not candidate.match(request):
                continue
            candidate.requests.append(request)
            answer = candidate.answer(request)
            return await answer if inspect.isawaitable(answer) else answer
        except Exception as err:
            log.exception("model server route %s raised", candidate.name)
            return _handler_error(f"agents.testing route {candidate.name!r} raised {err!r}")
    return None


class Script:
    """The scripted replies not consumed yet; safe to fill from a test's thread while the server's
    loop consumes them."""

    def __init__(self) -> None:
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()

    def extend(self, replies: Iterable[Reply]) -> None:
        with self._lock:
            self._replies.extend(replies)

    def __len__(self) -> int:
        with self._lock:
            return len(self._replies)

    def clear(self) -> None:
        with self._lock:
            self._replies.clear()

    def next(self) -> Reply | None:
        """The next scripted reply, taken off the queue; None when there is none."""
        with self._lock:
            return self._replies.popleft() if self._replies else None


def _handler_error(detail: str) -> Reply:
    return Reply.error(500, detail, code="handler_error", headers={"x-should-retry": "false"})


async def choose(script: Script, handler: Handler | None, mode: Mode, request: ModelRequest) -> Reply:
    """The reply to `request` (see the module)."""
    scripted = script.next()
    if scripted is not None:
        return scripted
    if handler is not None:
        try:
            answer = handler(request)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as err:
            log.exception("model server handler raised")
            return _handler_error(f"agents.testing handler raised {err!r}")
        if answer is not None:
            if not isinstance(answer, Reply):
                return _handler_error(f"agents.testing handler returned {answer!r}, not a Reply")
            return answer
    if mode == "scripted":
        return Reply.error(
            500,
            "agents.testing.ModelServer: script exhausted (no scripted reply left, no handler answer)",
            code="script_exhausted",
            headers={"x-should-retry": "false"},
        )
    return offline_reply(request)
