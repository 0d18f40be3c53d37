"""Worker processes as the Functions host keeps them: started, initialised, invoked, restarted.

A ``WorkerGroup`` holds ``FUNCTIONS_WORKER_PROCESS_COUNT`` workers of one app. Each worker is a
``python -m devhost.worker`` process (``ProcessWorker``) loading the app with the real runtime; an
app given as an object (a test embedding the host) runs in an ``InProcessWorker``: the same
runtime handlers and messages, without the process boundary. A worker process that dies fails its
in-flight invocations with ``WorkerDied`` and is started again, as the host restarts a worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import pathlib
import signal
import socket
import sys
import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

from .._errors import AppLoadError
from . import _channel
from ._messages import (
    FunctionsMetadataRequest,
    InvocationRequest,
    InvocationResponse,
    RpcFunctionMetadata,
    StatusResult,
    StreamingMessage,
    WorkerInitRequest,
)
from ._runtime import RuntimeHandlers

HTTP_URI = "HttpUri"
PROCESS_COUNT_ENV = "FUNCTIONS_WORKER_PROCESS_COUNT"


class WorkerDied(Exception):
    """The worker process ended while an invocation was in flight."""


class FunctionTimedOut(Exception):
    """The invocation ran past ``functionTimeout``; the host restarted its worker process."""


@dataclass
class WorkerSpec:
    """How to start a worker of this app."""

    function_app_directory: str
    script_file: str | None = None  # PYTHON_SCRIPT_FILE_NAME, when not function_app.py
    app: Any = None  # an app object: run in-process
    sys_path: list[str] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)  # on top of the host's own
    host_address: str = "127.0.0.1"


def process_count() -> int:
    """``FUNCTIONS_WORKER_PROCESS_COUNT``: the real app setting (1 to 10, default 1)."""
    raw = os.environ.get(PROCESS_COUNT_ENV, "").strip()
    if not raw:
        return 1
    if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= 10:
        raise AppLoadError(f"{PROCESS_COUNT_ENV} must be a whole number from 1 to 10, not {raw!r}")
    return int(raw)


class Worker(Protocol):
    name: str
    http_uri: str | None
    in_flight: int

    @property
    def alive(self) -> bool: ...

    async def start(self) -> list[RpcFunctionMetadata]: ...

    async def invoke(self, request: InvocationRequest) -> InvocationResponse: ...

    async def stop(self) -> None: ...


def _init_failure(name: str, status: StatusResult | None) -> AppLoadError:
    message = status.exception.message if status is not None and status.exception else "no reason given"
    return AppLoadError(f"the Python worker could not load the app: {message}")


class _Requests:
    """Request ids and the futures waiting for their answers."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self.waiting: dict[str, asyncio.Future[StreamingMessage]] = {}

    def open(self, message: StreamingMessage) -> asyncio.Future[StreamingMessage]:
        message.request_id = str(next(self._ids))
        future: asyncio.Future[StreamingMessage] = asyncio.get_running_loop().create_future()
        self.waiting[message.request_id] = future
        return future

    def answer(self, message: StreamingMessage) -> None:
        future = self.waiting.pop(message.request_id, None)
        if future is not None and not future.done():
            future.set_result(message)

    def fail_all(self, error: Exception) -> None:
        waiting, self.waiting = self.waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_exception(error)


async def _initialise(worker: Any, spec: WorkerSpec) -> list[RpcFunctionMetadata]:
    init = await worker.request(StreamingMessage(worker_init_request=WorkerInitRequest(
        host_version="devhost", function_app_directory=spec.function_app_directory,
        worker_directory=spec.function_app_directory)))
    response = init.worker_init_response
    if response is None or response.result is None or response.result.status != StatusResult.Success:
        raise _init_failure(worker.name, response.result if response else None)
    worker.http_uri = response.capabilities.get(HTTP_URI)
    answer = await worker.request(StreamingMessage(
        functions_metadata_request=FunctionsMetadataRequest(spec.function_app_directory)))
    metadata = answer.function_metadata_response
    if metadata is None or metadata.result is None or metadata.result.status != StatusResult.Success:
        raise _init_failure(worker.name, metadata.result if metadata else None)
    return list(metadata.function_metadata_results or [])


async def _invoke(worker: Any, request: InvocationRequest) -> InvocationResponse:
    """One invocation on ``worker``, counted while in flight (the group picks the least busy)."""
    worker.in_flight += 1
    try:
        answer = await worker.request(StreamingMessage(invocation_request=request))
    finally:
        worker.in_flight -= 1
    if answer.invocation_response is None:
        raise WorkerDied(f"{worker.name} answered an invocation with {answer!r}")
    return answer.invocation_response


class ProcessWorker:
    """One ``python -m devhost.worker`` process and its socket pair."""

    def __init__(self, spec: WorkerSpec, name: str, log: logging.Logger) -> None:
        self.spec = spec
        self.name = name
        self.http_uri: str | None = None
        self.in_flight = 0
        self._log = log
        self._process: asyncio.subprocess.Process | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._requests = _Requests()
        self._reading: asyncio.Task[None] | None = None
        self._write_lock = asyncio.Lock()
        self.exited: asyncio.Event = asyncio.Event()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.returncode is None and not self.exited.is_set()

    async def start(self) -> list[RpcFunctionMetadata]:
        host_end, worker_end = socket.socketpair()
        env = {**os.environ, **self.spec.environment}
        # The worker's entry point is this package, wherever the host was imported from.
        here = str(pathlib.Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
        if self.spec.script_file:
            env["PYTHON_SCRIPT_FILE_NAME"] = self.spec.script_file
        try:
            self._process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "devhost.worker", "--fd", str(worker_end.fileno()),
                "--host-address", self.spec.host_address, "--name", self.name,
                "--sys-path", json.dumps(self.spec.sys_path),
                pass_fds=(worker_end.fileno(),), env=env, cwd=self.spec.function_app_directory,
                stdin=asyncio.subprocess.DEVNULL,
            )
        finally:
            worker_end.close()
        reader, self._writer = await asyncio.open_unix_connection(sock=host_end)
        self._reading = asyncio.create_task(self._read(reader))
        metadata = await _initialise(self, self.spec)
        self._log.info("worker %s started (pid %s)", self.name, self.pid)
        return metadata

    async def _read(self, reader: asyncio.StreamReader) -> None:
        while (message := await _channel.receive(reader)) is not None:
            self._requests.answer(message)
        self.exited.set()
        self._requests.fail_all(WorkerDied(f"{self.name} (pid {self.pid}) exited"))

    async def request(self, message: StreamingMessage) -> StreamingMessage:
        if self._writer is None or self.exited.is_set():
            raise WorkerDied(f"{self.name} is not running")
        future = self._requests.open(message)
        try:
            async with self._write_lock:
                await _channel.send(self._writer, message)
        except (ConnectionError, OSError) as exc:
            self._requests.waiting.pop(message.request_id, None)
            raise WorkerDied(f"{self.name} (pid {self.pid}) is gone: {exc}") from exc
        try:
            return await future
        finally:
            # Answered, or abandoned by its caller (cancelled): either way nothing waits for it now.
            self._requests.waiting.pop(message.request_id, None)

    async def invoke(self, request: InvocationRequest) -> InvocationResponse:
        return await _invoke(self, request)

    def kill(self) -> None:
        """SIGKILL, as a crash would (tests)."""
        if self._process is not None and self._process.returncode is None:
            self._process.send_signal(signal.SIGKILL)

    async def stop(self) -> None:
        if self._writer is not None:
            self._writer.close()
        process = self._process
        if process is not None and process.returncode is None:
            # Closing the pair ends the worker's loop; a worker stuck in user code is killed.
            try:
                await asyncio.wait_for(process.wait(), 2.0)
            except TimeoutError:
                process.kill()
                await process.wait()
        if self._reading is not None:
            self._reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reading
        self.exited.set()
        self._requests.fail_all(WorkerDied(f"{self.name} stopped"))


class InProcessWorker:
    """The runtime's handlers in the host's own process, for an app given as an object."""

    def __init__(self, spec: WorkerSpec, name: str) -> None:
        self.spec = spec
        self.name = name
        self.http_uri: str | None = None
        self.in_flight = 0
        self.exited = asyncio.Event()
        self._handlers = RuntimeHandlers(spec.host_address, app=spec.app)
        self._requests = _Requests()

    @property
    def alive(self) -> bool:
        return not self.exited.is_set()

    async def start(self) -> list[RpcFunctionMetadata]:
        return await _initialise(self, self.spec)

    async def request(self, message: StreamingMessage) -> StreamingMessage:
        message.request_id = str(uuid.uuid4())
        return await self._handlers.handle(message)

    async def invoke(self, request: InvocationRequest) -> InvocationResponse:
        return await _invoke(self, request)

    async def stop(self) -> None:
        self.exited.set()


class WorkerGroup:
    """The workers of one group (all functions, or in the flex topology HTTP or Durable)."""

    def __init__(
        self, name: str, spec: WorkerSpec, count: int, log: logging.Logger, timeout: float | None = None
    ) -> None:
        self.name = name
        self.timeout = timeout  # host.json functionTimeout, seconds (None: unbounded)
        self.spec = spec
        self.count = count if spec.app is None else 1  # one runtime per process
        self._log = log
        self.workers: list[Any] = []
        self.metadata: list[RpcFunctionMetadata] = []
        self.restarts = 0
        self._stopping = False
        self._watchers: set[asyncio.Task[None]] = set()
        self._ready = asyncio.Event()
        self._numbers = itertools.count(1)

    def _new_worker(self) -> Any:
        label = f"{self.name}-worker-{next(self._numbers)}"
        if self.spec.app is not None:
            return InProcessWorker(self.spec, label)
        return ProcessWorker(self.spec, label, self._log)

    async def start(self) -> list[RpcFunctionMetadata]:
        workers = [self._new_worker() for _ in range(self.count)]
        self.workers = workers
        results = await asyncio.gather(*(w.start() for w in workers), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        self.metadata = results[0]  # type: ignore[assignment]
        for worker in workers:
            self._watch(worker)
        self._ready.set()
        return self.metadata

    def _watch(self, worker: Any) -> None:
        if isinstance(worker, ProcessWorker):
            task = asyncio.create_task(self._restart_when_exited(worker))
            self._watchers.add(task)
            task.add_done_callback(self._watchers.discard)

    async def _restart_when_exited(self, worker: ProcessWorker) -> None:
        await worker.exited.wait()
        if self._stopping:
            return
        self._log.warning("%s (pid %s) exited; starting a new worker process", worker.name, worker.pid)
        await worker.stop()
        delay = 0.2
        while not self._stopping:
            replacement = self._new_worker()
            try:
                await replacement.start()
            except Exception as exc:  # keep trying, as the host does, with a growing pause
                self._log.error("restarting %s failed: %s", worker.name, exc)
                await replacement.stop()
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
                continue
            self.workers = [replacement if w is worker else w for w in self.workers]
            self.restarts += 1
            self._watch(replacement)
            return

    async def pick(self, timeout: float = 30.0) -> Any:
        """The live worker with the fewest invocations in flight (waits while all restart)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            live = [w for w in self.workers if w.alive]
            if live:
                return min(live, key=lambda w: w.in_flight)
            if self._stopping or asyncio.get_running_loop().time() > deadline:
                raise WorkerDied(f"no {self.name} worker is running")
            await asyncio.sleep(0.05)

    async def invoke(self, request: InvocationRequest) -> InvocationResponse:
        worker = await self.pick()
        if self.timeout is None:
            return await worker.invoke(request)
        try:
            return await asyncio.wait_for(worker.invoke(request), self.timeout)
        except TimeoutError:
            pass
        # As the Functions host does past functionTimeout: the worker process is restarted, which
        # ends every invocation running in it (they fail with WorkerDied; this one timed out).
        self._log.error("invocation %s of function %s ran past functionTimeout (%.0f s); restarting %s",
                        request.invocation_id, request.function_id, self.timeout, worker.name)
        if isinstance(worker, ProcessWorker):
            worker.kill()
        raise FunctionTimedOut(f"the function ran past functionTimeout ({self.timeout:.0f} s)")

    async def stop(self) -> None:
        self._stopping = True
        for task in list(self._watchers):
            task.cancel()
        await asyncio.gather(*(w.stop() for w in self.workers), return_exceptions=True)


def script_spec(target: str, project_dir: pathlib.Path) -> tuple[str, str | None]:
    """The function app directory and script file for an app module name (``module[:attr]``)."""
    import importlib.util

    module_name = target.partition(":")[0]
    if "." in module_name:
        raise AppLoadError(f"the worker loads the app from a script file; {module_name!r} is in a package")
    candidate = project_dir / f"{module_name}.py"
    if candidate.is_file():
        origin = candidate
    else:
        try:
            found = importlib.util.find_spec(module_name)
        except (ImportError, ValueError) as exc:
            raise AppLoadError(f"cannot find app module {module_name!r}: {exc!r}") from exc
        if found is None or not found.origin or pathlib.Path(found.origin).name != f"{module_name}.py":
            raise AppLoadError(f"cannot load app module {module_name!r}: the worker imports the app "
                               f"from a script file {module_name}.py, and there is none")
        origin = pathlib.Path(found.origin)
    script = origin.name
    return str(origin.parent), (None if script == "function_app.py" else script)
