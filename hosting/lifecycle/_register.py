"""The lifecycle's durable functions declared on the app: expiry and cleanup orchestrations, the
sweeper, a user's erasure, and their activities."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import azure.durable_functions as df

from ..client import BoundClient, durable_client_input
from ..streams import StreamStore
from ._approval_expiry import approval_expiry_orchestrator
from ._ended import ENDED, ENDED_HOOKS, EndHooks, ended_orchestrator
from ._erasure import Eraser, erasure_orchestrator
from ._expiry import cleanup_orchestrator, expiry_orchestrator, forget_activity
from ._names import (
    APPROVAL_EXPIRY,
    CLEANUP,
    ERASE_FIND_MEMORIES,
    ERASE_FIND_SESSIONS,
    ERASE_MEMORIES,
    ERASE_SESSION_DATA,
    ERASURE,
    EXPIRY,
    FORGET,
    SWEEP,
    SWEEPER,
)
from ._sweeper import sweep_activity, sweeper_orchestrator


def register_lifecycle(app: df.DFApp, streams: StreamStore, agents: Sequence[Any] = ()) -> None:
    """Register the lifecycle orchestrators and activities (the sweeper's and the erasure's too)
    on the app; `streams`: the app's stream store (an erasure deletes the user's events there);
    `agents`: the hosted agents, whose providers' session-end hooks the lifecycle runs."""
    orchestrators = (
        (EXPIRY, expiry_orchestrator),
        (CLEANUP, cleanup_orchestrator),
        (SWEEPER, sweeper_orchestrator),
        (ERASURE, erasure_orchestrator),
        (APPROVAL_EXPIRY, approval_expiry_orchestrator),
        (ENDED, ended_orchestrator),
    )
    for name, function in orchestrators:
        function.__name__ = name
        decorated = app.orchestration_trigger(context_name="context", orchestration=name)(function)
        app.function_name(name)(decorated)

    # `spec: dict`: the worker refuses an activity trigger annotated with a generic alias.
    async def forget(spec: dict) -> int:
        return await forget_activity(spec)

    forget.__name__ = FORGET
    app.function_name(FORGET)(app.activity_trigger(input_name="spec", activity=FORGET)(forget))

    async def sweep(spec: dict, client: BoundClient) -> dict[str, Any]:
        return await sweep_activity(spec, client)

    hooks = EndHooks(agents)

    async def end_hooks(spec: dict, client: BoundClient) -> int:
        return await hooks.run(spec, client)

    end_hooks.__name__ = ENDED_HOOKS
    hooks_with_client = durable_client_input(app, end_hooks)
    app.function_name(ENDED_HOOKS)(
        app.activity_trigger(input_name="spec", activity=ENDED_HOOKS)(hooks_with_client)
    )

    sweep.__name__ = SWEEP
    with_client = durable_client_input(app, sweep)
    app.function_name(SWEEP)(app.activity_trigger(input_name="spec", activity=SWEEP)(with_client))
    _register_erasure(app, Eraser(streams))


def _register_erasure(app: df.DFApp, eraser: Eraser) -> None:
    # Plain `dict` and `list` annotations: the worker refuses generic aliases on activity triggers.
    async def find_sessions(spec: dict, client: BoundClient) -> list:
        return await eraser.find_sessions(spec, client)

    async def forget_sessions(spec: dict, client: BoundClient) -> int:
        await eraser.stop_expiries(spec, client)
        return await eraser.forget_sessions(spec)

    async def find_memories(spec: dict) -> list:
        return await eraser.find_memories(spec)

    async def forget_memories(spec: dict) -> int:
        return await eraser.forget_memories(spec)

    for name, with_client in ((ERASE_FIND_SESSIONS, find_sessions), (ERASE_SESSION_DATA, forget_sessions)):
        with_client.__name__ = name
        bound = durable_client_input(app, with_client)
        app.function_name(name)(app.activity_trigger(input_name="spec", activity=name)(bound))
    for name, function in (
        (ERASE_FIND_MEMORIES, find_memories),
        (ERASE_MEMORIES, forget_memories),
    ):
        function.__name__ = name
        app.function_name(name)(app.activity_trigger(input_name="spec", activity=name)(function))
