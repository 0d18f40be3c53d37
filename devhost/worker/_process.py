"""A worker process: ``python -m devhost.worker --fd N`` loads the app with the real runtime.

The host starts one per ``FUNCTIONS_WORKER_PROCESS_COUNT`` (per group, in the flex topology),
hands it one end of a socket pair and the environment the app sees, and sends the protocol's
requests: worker init (the runtime indexes the app), functions metadata, then invocations, many at
once. Each request is answered on the same pair. When the host goes away the pair closes and the
process exits, so no worker outlives its host.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import socket
import sys
import traceback

from .._logs import TraceIdFormatter
from . import _channel
from ._messages import RpcException, StatusResult, StreamingMessage
from ._runtime import RuntimeHandlers

log = logging.getLogger("devhost.worker")


def _failure(message: StreamingMessage, exc: BaseException) -> StreamingMessage:
    """An answer for a request the runtime's handler raised on (it normally answers failures)."""
    status = StatusResult(
        status=StatusResult.Failure,
        exception=RpcException(message=f"{type(exc).__name__}: {exc}",
                               stack_trace="".join(traceback.format_exception(exc))),
    )
    reply = StreamingMessage(request_id=message.request_id)
    request = message.invocation_request
    if request is not None:
        from ._messages import InvocationResponse

        reply.invocation_response = InvocationResponse(invocation_id=request.invocation_id, result=status)
    return reply


async def serve(fd: int, host_address: str) -> None:
    sock = socket.socket(fileno=fd)
    reader, writer = await asyncio.open_unix_connection(sock=sock)
    handlers = RuntimeHandlers(host_address)
    write_lock = asyncio.Lock()
    running: set[asyncio.Task[None]] = set()

    async def answer(message: StreamingMessage) -> None:
        try:
            reply = await handlers.handle(message)
        except Exception as exc:  # the handlers answer failures themselves; this is the backstop
            log.exception("worker: request failed")
            reply = _failure(message, exc)
        async with write_lock:
            await _channel.send(writer, reply)

    while (message := await _channel.receive(reader)) is not None:
        task = asyncio.create_task(answer(message))
        running.add(task)
        task.add_done_callback(running.discard)
        if message.worker_init_request is not None:
            task.add_done_callback(lambda _: _quiet_servers())
    # The host closed the pair (it stopped, or died): nothing will read an answer now, and
    # invocations still running in the runtime's threads have nobody to answer to (their entity
    # operations are redelivered), so the process ends here without waiting for them.
    logging.shutdown()
    os._exit(0)


def _quiet_servers() -> None:
    """The HTTP streams server (uvicorn) sets its loggers to INFO when it starts; the host
    already logs every request."""
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m devhost.worker")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--host-address", default="127.0.0.1")
    parser.add_argument("--sys-path", default="[]", help="JSON list put first on sys.path")
    parser.add_argument("--name", default="worker")
    args = parser.parse_args(argv)
    for entry in reversed(json.loads(args.sys_path)):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(TraceIdFormatter(f"%(asctime)s %(levelname).1s [{args.name}] %(message)s",
                                          datefmt="%H:%M:%S"))
    logging.basicConfig(level=os.environ.get("DEVHOST_WORKER_LOG_LEVEL", "INFO"), handlers=[handler])
    # The runtime logs each invocation at INFO, the model client each call; the host already
    # logs each request and entity operation.
    for name in ("azure.functions", "httpx", "httpx2", "mcp"):
        logging.getLogger(name).setLevel(logging.WARNING)
    _quiet_servers()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.fd, args.host_address))
