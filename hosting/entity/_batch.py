"""The agent entity's function as the Functions host calls it: the Durable SDK's batch handler,
guarded so that a batch the SDK itself cannot complete still answers every run.

The SDK reports an exception of the entity code per operation, but when the SDK raises (reading
the batch request, or writing its response) the whole function invocation fails. The Durable
extension then aborts the batch without committing anything and retries it later, again and
again (`TaskEntityShim.ExecuteOutOfProcBatch` → `SessionAbortedException`); the local host does
the same. A run in such a batch would stay `pending` for as long as the failure lasts, and every
later operation of the session would wait behind it. So when the SDK raises, this wrapper
answers the batch itself, in the same JSON response format: each `run` is recorded as a failed
turn `internal_error` in the state (exactly as the entity records a turn that raised, so the
HTTP side answers it from the stored state, locally and in Azure alike), as is the turn of a
`step`; any other operation fails with the error. Only a request that is not even JSON is left
to the host's retries.

The function the worker calls is `async def`: the worker runs a coroutine function on its own event
loop and a plain one on its thread pool (azure-functions-runtime `handle_event.invocation_request`,
`fi.is_async`; the Python worker's `Dispatcher._handle__invocation_request` for 3.11/3.12), whose
default size is `min(32, cores + 4)` (`PYTHON_THREADPOOL_THREAD_COUNT` unset). A batch holds its
thread for its whole model call, so six slow turns on two cores would stop every other session of
the instance. The SDK's batch handler is synchronous (`Entity.create` calls the entity function
and serialises its result), so it runs on this module's own threads instead, as many as the host
ever runs batches at once, and the runtime's pool stays free for what else it runs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import azure.functions as func
from azure.durable_functions.models.entities import EntityState, OperationResult

from agents import failure

from .._errors import InvalidOperation, ProblemCode
from ._context import batch_outcome, standalone_context, start_operation
from ._deadline import batch_clock
from ._signals import collecting, with_signals

if TYPE_CHECKING:
    from ._entity import AgentEntity

log = logging.getLogger("hosting.entity")

BatchHandler = Callable[[func.EntityContext], str]
"""The SDK's entity handler: the batch request in, the JSON response out.

The worker loads an entity function only when its trigger parameter is unannotated or annotated
with `azure.functions.EntityContext` (what it passes: the batch request JSON as `body`)."""

EntityFunction = Callable[[func.EntityContext], Awaitable[str]]
"""The entity function the worker calls: a coroutine function, run on the worker's event loop."""

BATCH_THREADS = 1024
"""The most batches a worker process runs at once on `batch_threads()`: above what the host sends
(host.json's `maxConcurrentOrchestratorFunctions` / `maxConcurrentEntityFunctions`, 256), so that a
batch never waits for a thread. Threads are made as batches need them and reused."""

_pool_lock = threading.Lock()
_pool: concurrent.futures.ThreadPoolExecutor | None = None


def batch_threads() -> concurrent.futures.ThreadPoolExecutor:
    """The threads entity batches run on, apart from the runtime's pool; made on first use."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(BATCH_THREADS, thread_name_prefix="hosting-batch")
        return _pool


def guarded_batch(entity: AgentEntity, handle: BatchHandler) -> EntityFunction:
    """`handle` (the SDK's `Entity.create(...)` handler), answering the batch itself when it raises,
    run on `batch_threads()` from a coroutine function."""

    def run(context: func.EntityContext) -> str:
        with collecting() as signals:
            try:
                # The batch's budget starts now: its runs share it (hosting.entity._deadline).
                with batch_clock(entity.limits):
                    response = handle(context)
            except Exception as error:
                name = entity.name
                log.exception("entity %s: the Durable SDK failed the batch; runs recorded as failed", name)
                signals.clear()  # the operations' signals went with the batch the SDK failed
                response = failed_batch(entity, context, error)
            # The steps of a turn signal their entity (hosting.entity._signals).
            return with_signals(response, signals)

    async def batch(context: func.EntityContext) -> str:
        # The invocation's context variables (the runtime's invocation id, which its log handler
        # reads, and the trace context it attached) go with the batch to its thread.
        call = contextvars.copy_context().run
        return await asyncio.get_running_loop().run_in_executor(batch_threads(), call, run, context)

    batch.__name__ = getattr(handle, "__name__", entity.name)
    return batch


def failed_batch(entity: AgentEntity, context: func.EntityContext | str, error: Exception) -> str:
    """The response to a batch the SDK could not complete: runs recorded as failed on the state as
    it was before the batch, other operations failed. Raises `error` again when the request
    cannot be read at all (nothing to answer; the host retries)."""
    # The worker's EntityContext carries the request JSON as `body`; a host may pass the JSON itself.
    body: Any = getattr(context, "body", None)
    try:
        request = json.loads(body if body is not None else str(context))
        own = request["self"]
        operations = list(request["batch"])
        state = request.get("state")
        exists = bool(request.get("exists"))
        sdk_context = standalone_context(str(own["name"]), str(own["key"]), exists, state)
    except Exception:
        raise error from None
    message = f"the entity batch failed in the Durable Functions SDK: {type(error).__name__}: {error}"
    unfinished = failure(ProblemCode.INTERNAL_ERROR, message)
    response = EntityState(results=[], signals=[])
    for operation in operations:
        started = time.time()
        result: Any
        try:
            name = operation.get("name") if isinstance(operation, dict) else None
            if name not in ("run", "step"):
                raise InvalidOperation(message)
            start_operation(sdk_context, name, operation.get("input"))
            fail = entity.fail_run if name == "run" else entity.fail_step
            result, is_error = fail(sdk_context, unfinished), False
        except Exception as operation_error:
            result, is_error = str(operation_error), True
        duration = int((time.time() - started) * 1000)
        response.results.append(OperationResult(is_error, duration, int(started * 1000), result))
    response.state, response.state_is_raw, response.entity_exists = batch_outcome(sdk_context)
    return response.to_json_string()
