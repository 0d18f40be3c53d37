"""The lifecycle's durable functions declared on the app: expiry and cleanup orchestrations, the
sweeper, and their activities."""

from __future__ import annotations

from typing import Any

import azure.durable_functions as df

from ..client._binding import BoundClient, durable_client_input
from ._expiry import cleanup_orchestrator, expiry_orchestrator, forget_activity
from ._names import CLEANUP, EXPIRY, FORGET, SWEEP, SWEEPER
from ._sweeper import sweep_activity, sweeper_orchestrator


def register_lifecycle(app: df.DFApp) -> None:
    """Register the lifecycle orchestrators and activities (the sweeper's too) on the app."""
    orchestrators = (
        (EXPIRY, expiry_orchestrator),
        (CLEANUP, cleanup_orchestrator),
        (SWEEPER, sweeper_orchestrator),
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

    sweep.__name__ = SWEEP
    with_client = durable_client_input(app, sweep)
    app.function_name(SWEEP)(app.activity_trigger(input_name="spec", activity=SWEEP)(with_client))
