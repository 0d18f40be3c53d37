"""Orchestrator and activity functions of the app, and running an activity as the worker does."""

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

from ..functions import list_functions


@dataclass(frozen=True)
class DurableFunction:
    """An orchestrator or activity function as the app registered it."""

    name: str
    function_name: str
    func: Callable[..., Any]
    param: str


@dataclass
class DurableFunctions:
    """Orchestrators and activities by the names callers may use (case-insensitive, as in the
    Functions host)."""

    orchestrators: dict[str, DurableFunction]
    activities: dict[str, DurableFunction]

    def orchestrator(self, name: str) -> DurableFunction | None:
        return self.orchestrators.get(name.lower())

    def activity(self, name: str) -> DurableFunction | None:
        return self.activities.get(name.lower())

    @classmethod
    def index(cls, app: Any) -> DurableFunctions:
        """Index ``app.get_functions()`` by trigger binding type.

        A binding's ``orchestration``/``activity`` name wins, but the function name is accepted
        too: the SDK resolves ``call_activity(fn)`` (a V2 function object) to the function name.
        """
        orchestrators: dict[str, DurableFunction] = {}
        activities: dict[str, DurableFunction] = {}
        for function in list_functions(app):
            fname = function.get_function_name()
            for binding in function.get_bindings():
                repr_ = binding.get_dict_repr()
                kind = repr_.get("type")
                if kind == "orchestrationTrigger":
                    target, declared = orchestrators, repr_.get("orchestration")
                elif kind == "activityTrigger":
                    target, declared = activities, repr_.get("activity")
                else:
                    continue
                entry = DurableFunction(declared or fname, fname, function.get_user_function(), repr_["name"])
                target.setdefault(fname.lower(), entry)
                if declared:
                    target[declared.lower()] = entry
        return cls(orchestrators, activities)


class ActivityFailed(Exception):
    """An activity raised; ``reason``/``details`` become the TaskFailed event's fields."""

    def __init__(self, reason: str, details: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.details = details


async def run_activity(
    activity: DurableFunction, input_text: str | None, executor: concurrent.futures.Executor
) -> str:
    """Run ``activity`` with its JSON input text; return the result JSON text.

    Input and output go through the worker's own ``activityTrigger`` converter, so values
    decode and encode exactly as on Azure. Async functions run on the loop, others on the pool.
    """
    datum = meta.Datum(type="json", value=input_text if input_text is not None else "null")
    try:
        value = ActivityTriggerConverter.decode(datum, trigger_metadata=None)
        kwargs = {activity.param: value}
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
