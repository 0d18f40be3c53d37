"""Orchestrators and activities by the names callers use; running an activity as the worker does."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from azure.functions import meta
from azure.functions.durable_functions import ActivityTriggerConverter

from ..functions import AppModel, NamedFunction


@dataclass
class DurableFunctions:
    """Orchestrators and activities by the names callers may use (case-insensitive, as in the
    Functions host)."""

    orchestrators: dict[str, NamedFunction]
    activities: dict[str, NamedFunction]

    def orchestrator(self, name: str) -> NamedFunction | None:
        return self.orchestrators.get(name.lower())

    def activity(self, name: str) -> NamedFunction | None:
        return self.activities.get(name.lower())

    @classmethod
    def of(cls, model: AppModel) -> DurableFunctions:
        """The orchestrators and activities of the host's one index of the app.

        A binding's ``orchestration``/``activity`` name wins, but the function name is accepted
        too: the SDK resolves ``call_activity(fn)`` (a V2 function object) to the function name.
        """
        orchestrators: dict[str, NamedFunction] = {}
        activities: dict[str, NamedFunction] = {}
        for source, target in ((model.orchestrators, orchestrators), (model.activities, activities)):
            for entry in source.values():
                target.setdefault(entry.function_name.lower(), entry)
            for entry in source.values():
                target[entry.name.lower()] = entry
        return cls(orchestrators, activities)


class ActivityFailed(Exception):
    """An activity raised; ``reason``/``details`` become the TaskFailed event's fields."""

    def __init__(self, reason: str, details: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.details = details


ClientBinding = Callable[[dict[str, Any]], str]


async def run_activity(
    activity: NamedFunction,
    input_text: str | None,
    executor: concurrent.futures.Executor,
    client_binding: ClientBinding | None = None,
) -> str:
    """Run ``activity`` with its JSON input text; return the result JSON text.

    Input and output go through the worker's own ``activityTrigger`` converter, so values
    decode and encode exactly as on Azure. Async functions run on the loop, others on the pool.
    A durableClient input binding gets ``client_binding``'s JSON, as an HTTP function's does.
    """
    datum = meta.Datum(type="json", value=input_text if input_text is not None else "null")
    try:
        value = ActivityTriggerConverter.decode(datum, trigger_metadata=None)
        kwargs: dict[str, Any] = {activity.param: value}
        if activity.client_params:
            if client_binding is None:
                raise RuntimeError("this host gives activities no durable client binding")
            for param, binding in activity.client_params.items():
                kwargs[param] = client_binding(binding)
        if inspect.iscoroutinefunction(activity.func):
            result = await activity.func(**kwargs)
        else:
            loop = asyncio.get_running_loop()
            result = await loop.run_in_executor(executor, functools.partial(activity.func, **kwargs))
        encoded = ActivityTriggerConverter.encode(result, expected_type=None)
    except Exception as exc:
        raise ActivityFailed(
            f"Activity function '{activity.name}' failed: {type(exc).__name__}: {exc}",
            "".join(traceback.format_exception(exc)),
        ) from exc
    return str(encoded.value)
