"""Orchestrators and activities by the names callers use; running an activity in a worker."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..functions import AppModel, NamedFunction
from ..worker import FunctionFailed, FunctionTimedOut, WorkerDied, Workers, invocation


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
    workers: Workers,
    client_binding: ClientBinding | None = None,
) -> str:
    """Run ``activity`` in a worker with its JSON input text; return the result JSON text.

    The input goes as the extension sends it (JSON text) and the runtime's ``activityTrigger``
    converter decodes and encodes it, exactly as on Azure. A durableClient input binding gets
    ``client_binding``'s JSON, as an HTTP function's does.
    """
    inputs = {activity.param: invocation.json_text(input_text if input_text is not None else "null")}
    if activity.client_params:
        if client_binding is None:
            raise ActivityFailed("this host gives activities no durable client binding", "")
        for param, binding in activity.client_params.items():
            inputs[param] = invocation.string(client_binding(binding))
    call = invocation.request(activity.function_id, inputs)
    try:
        result = invocation.text_of(invocation.returned(await workers.invoke("activityTrigger", call)))
    except FunctionFailed as exc:
        reason = f"Activity function '{activity.name}' failed: {exc.message}"
        raise ActivityFailed(reason, exc.stack_trace) from exc
    except (WorkerDied, FunctionTimedOut) as exc:
        raise ActivityFailed(f"Activity function '{activity.name}' failed: {exc}", "") from exc
    return result if result is not None else "null"
