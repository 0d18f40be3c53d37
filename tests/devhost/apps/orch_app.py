"""A real DFApp exercising every orchestration feature the local host emulates."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Generator
from datetime import timedelta
from typing import Any

import azure.durable_functions as df
import azure.functions as func

app = df.DFApp(http_auth_level=func.AuthLevel.ANONYMOUS)

# Activities block on these so a test can hold one in flight (restart tests).
GATES: dict[str, threading.Event] = {}
CALLS: dict[str, int] = {}
_CALLS_LOCK = threading.Lock()


def _count(key: str) -> int:
    with _CALLS_LOCK:
        CALLS[key] = CALLS.get(key, 0) + 1
        return CALLS[key]


# -- HTTP routes (the durable client talks to the host over its RPC endpoints) ---------------


def _json(value: Any, status: int = 200) -> func.HttpResponse:
    return func.HttpResponse(json.dumps(value), status_code=status, mimetype="application/json")


@app.route(route="orchestrators/{name}", methods=["POST"])
@app.durable_client_input(client_name="client")
async def start_orchestration(
    req: func.HttpRequest, client: df.DurableOrchestrationClient
) -> func.HttpResponse:
    body = req.get_json() if req.get_body() else None
    instance_id = await client.start_new(req.route_params["name"], None, body)
    response: func.HttpResponse = client.create_check_status_response(req, instance_id)
    return response


@app.route(route="instances/{iid}/events/{name}", methods=["POST"])
@app.durable_client_input(client_name="client")
async def send_event(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    await client.raise_event(req.route_params["iid"], req.route_params["name"], req.get_json())
    return func.HttpResponse(status_code=202)


@app.route(route="instances/{iid}", methods=["GET"])
@app.durable_client_input(client_name="client")
async def instance_status(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    status = await client.get_status(req.route_params["iid"], show_history=True, show_history_output=True)
    if status.runtime_status is None:
        return _json({"missing": req.route_params["iid"]}, 404)
    return _json(
        {
            "runtimeStatus": status.runtime_status.value,
            "output": status.output,
            "customStatus": status.custom_status,
            "history": status.historyEvents,
        }
    )


@app.route(route="entities/{name}/{key}", methods=["GET"])
@app.durable_client_input(client_name="client")
async def entity_state(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    state = await client.read_entity_state(df.EntityId(req.route_params["name"], req.route_params["key"]))
    return _json({"exists": state.entity_exists, "state": state.entity_state})


# -- activities --------------------------------------------------------------------------------


@app.activity_trigger(input_name="name", activity="say_hello")
def say_hello(name: str) -> str:
    return f"Hello {name}!"


@app.activity_trigger(input_name="value")
def double(value: int) -> int:
    return value * 2


@app.activity_trigger(input_name="payload")
async def async_echo(payload: dict) -> dict[str, Any]:  # the worker takes a bare type, not dict[...]
    await asyncio.sleep(0)
    return {"echo": payload}


@app.activity_trigger(input_name="message")
def explode(message: str) -> str:
    raise ValueError(message)


@app.activity_trigger(input_name="key")
def flaky(key: str) -> str:
    """Fails until called three times for ``key``."""
    attempt = _count(f"flaky:{key}")
    if attempt < 3:
        raise RuntimeError(f"attempt {attempt} failed")
    return f"ok after {attempt}"


@app.activity_trigger(input_name="key")
def gated(key: str) -> str:
    """Counts its runs and waits until the test opens the gate ``key``."""
    _count(f"gated:{key}")
    gate = GATES.setdefault(key, threading.Event())
    if not gate.wait(timeout=10):
        raise TimeoutError(f"gate {key} never opened")
    return f"passed {key}"


@app.activity_trigger(input_name="files")
def file_gated(files: dict) -> str:  # the worker takes a bare type, not dict[...]
    """Appends to ``marker`` then waits for ``release`` to exist (a gate across processes)."""
    import pathlib
    import time

    with open(files["marker"], "a", encoding="utf-8") as out:
        out.write("started\n")
    deadline = time.monotonic() + 20
    while not pathlib.Path(files["release"]).exists():
        if time.monotonic() > deadline:
            raise TimeoutError("never released")
        time.sleep(0.02)
    return "released"


# -- entity ------------------------------------------------------------------------------------


@app.activity_trigger(input_name="key", activity="signal_through_client")
@app.durable_client_input(client_name="client")
async def signal_through_client(key: str, client: df.DurableOrchestrationClient) -> dict[str, Any]:
    """An activity that takes a durable client, as any Functions function may."""
    await client.signal_entity(df.EntityId("Counter", key), "add", 5)
    return {"signalled": key}


@app.entity_trigger(context_name="context", entity_name="Counter")
def counter(context: df.DurableEntityContext) -> None:
    value = context.get_state(lambda: 0)
    op = context.operation_name
    if op == "add":
        value += context.get_input()
        context.set_state(value)
        context.set_result(value)
    elif op == "get":
        context.set_result(value)
    elif op == "boom":
        raise ValueError("counter exploded")
    else:
        raise ValueError(f"unknown operation {op}")


# -- orchestrators -----------------------------------------------------------------------------

Gen = Generator[Any, Any, Any]


@app.orchestration_trigger(context_name="context")
def client_activity(context: df.DurableOrchestrationContext) -> Gen:
    return (yield context.call_activity("signal_through_client", context.get_input()))


@app.orchestration_trigger(context_name="context")
def chain(context: df.DurableOrchestrationContext) -> Gen:
    names = context.get_input() or ["Tokyo", "Seattle", "London"]
    results = []
    for name in names:
        results.append((yield context.call_activity("say_hello", name)))
    echoed = yield context.call_activity("async_echo", {"n": len(results)})
    return {"greetings": results, "echo": echoed, "replaying_at_end": context.is_replaying}


@app.orchestration_trigger(context_name="context")
def fan_out(context: df.DurableOrchestrationContext) -> Gen:
    count = context.get_input()
    tasks = [context.call_activity(double, i) for i in range(count)]
    values = yield context.task_all(tasks)
    return sum(values)


@app.orchestration_trigger(context_name="context")
def approval(context: df.DurableOrchestrationContext) -> Gen:
    timeout = context.get_input()["timeout"]
    context.set_custom_status({"stage": "waiting"})
    deadline = context.current_utc_datetime + timedelta(seconds=timeout)
    timer = context.create_timer(deadline)
    event = context.wait_for_external_event("approval")
    winner = yield context.task_any([event, timer])
    if winner == event:
        timer.cancel()
        context.set_custom_status({"stage": "approved"})
        return {"approved": event.result}
    context.set_custom_status({"stage": "timed out"})
    return {"approved": None}


@app.orchestration_trigger(context_name="context")
def sleeper(context: df.DurableOrchestrationContext) -> Gen:
    start = context.current_utc_datetime
    first_uuid = context.new_uuid()
    yield context.create_timer(start + timedelta(seconds=context.get_input()))
    after = context.current_utc_datetime
    # The activity runs in a later episode than the uuid was first made: equal only if replay-safe.
    echoed = yield context.call_activity("async_echo", first_uuid)
    return {"start": start.isoformat(), "after": after.isoformat(), "uuid": first_uuid, "echoed": echoed}


@app.orchestration_trigger(context_name="context")
def wait_twice(context: df.DurableOrchestrationContext) -> Gen:
    first = yield context.wait_for_external_event("first")
    context.set_custom_status("got first")
    second = yield context.wait_for_external_event("second")
    return [first, second]


@app.orchestration_trigger(context_name="context")
def parent(context: df.DurableOrchestrationContext) -> Gen:
    child = yield context.call_sub_orchestrator("chain", ["Ada"])
    doubled = yield context.call_activity("double", len(child["greetings"]))
    try:
        yield context.call_sub_orchestrator("failing", "from parent")
    except Exception as exc:
        return {"child": child, "doubled": doubled, "child_error": str(exc)}
    return {"child": child, "doubled": doubled, "child_error": None}


@app.orchestration_trigger(context_name="context")
def countdown(context: df.DurableOrchestrationContext) -> Gen:
    state = context.get_input()
    total = state["total"] + (yield context.call_activity("double", state["n"]))
    if state["n"] <= 1:
        return total
    context.continue_as_new({"n": state["n"] - 1, "total": total})
    return None


@app.orchestration_trigger(context_name="context")
def failing(context: df.DurableOrchestrationContext) -> Gen:
    yield context.call_activity("explode", f"bad input: {context.get_input()}")
    return "unreachable"


@app.orchestration_trigger(context_name="context")
def catching(context: df.DurableOrchestrationContext) -> Gen:
    try:
        yield context.call_activity("explode", "caught")
    except Exception as exc:
        caught = str(exc)
    try:
        yield context.call_activity("no_such_activity", None)
    except Exception as exc:
        missing = str(exc)
    try:
        yield context.call_http("GET", "http://127.0.0.1:9/")
    except Exception as exc:
        http = str(exc)
    return {"caught": caught, "missing": missing, "http": http}


@app.orchestration_trigger(context_name="context")
def retrying(context: df.DurableOrchestrationContext) -> Gen:
    key = context.get_input()
    options = df.RetryOptions(first_retry_interval_in_milliseconds=20, max_number_of_attempts=4)
    ok = yield context.call_activity_with_retry("flaky", options, key)
    after = yield context.call_activity("double", 21)
    try:
        few = df.RetryOptions(first_retry_interval_in_milliseconds=10, max_number_of_attempts=2)
        yield context.call_activity_with_retry("explode", few, "always")
        exhausted = None
    except Exception as exc:
        exhausted = str(exc)
    return {"ok": ok, "after": after, "exhausted": exhausted}


@app.orchestration_trigger(context_name="context")
def entity_user(context: df.DurableOrchestrationContext) -> Gen:
    key = context.get_input()
    entity = df.EntityId("Counter", key)
    first = yield context.call_entity(entity, "add", 5)
    context.signal_entity(entity, "add", 1)
    total = yield context.call_entity(entity, "get")
    try:
        yield context.call_entity(entity, "boom")
        error = None
    except Exception as exc:
        error = str(exc)
    both = yield context.task_all(
        [context.call_entity(entity, "add", 10), context.call_activity("double", 4)]
    )
    return {"first": first, "total": total, "error": error, "both": both}


@app.orchestration_trigger(context_name="context")
def gate_keeper(context: df.DurableOrchestrationContext) -> Gen:
    key = context.get_input()
    passed = yield context.call_activity("gated", key)
    yield context.create_timer(context.current_utc_datetime + timedelta(milliseconds=300))
    return passed


@app.orchestration_trigger(context_name="context")
def drifting(context: df.DurableOrchestrationContext) -> Gen:
    """Changes what it schedules between replays: a non-deterministic orchestrator."""
    CALLS["drifting"] = CALLS.get("drifting", 0) + 1
    name = "say_hello" if CALLS["drifting"] == 1 else "double"
    yield context.call_activity(name, 1)
    yield context.call_activity("double", 2)
    return "done"


@app.orchestration_trigger(context_name="context")
def flaky_child(context: df.DurableOrchestrationContext) -> Gen:
    result = yield context.call_activity("flaky", context.get_input())
    return {"child_result": result, "parent": context.parent_instance_id}


@app.orchestration_trigger(context_name="context")
def retrying_parent(context: df.DurableOrchestrationContext) -> Gen:
    options = df.RetryOptions(first_retry_interval_in_milliseconds=20, max_number_of_attempts=4)
    child = yield context.call_sub_orchestrator_with_retry("flaky_child", options, context.get_input())
    try:
        once = df.RetryOptions(first_retry_interval_in_milliseconds=10, max_number_of_attempts=2)
        yield context.call_sub_orchestrator_with_retry("failing", once, "twice")
        error = None
    except Exception as exc:
        error = str(exc)
    return {"child": child, "error": error}


@app.orchestration_trigger(context_name="context")
def parent_of_waiter(context: df.DurableOrchestrationContext) -> Gen:
    try:
        yield context.call_sub_orchestrator("wait_twice", None, context.get_input())
    except Exception as exc:
        return {"child_failed": str(exc)}
    return {"child_failed": None}


@app.orchestration_trigger(context_name="context")
def kill_target(context: df.DurableOrchestrationContext) -> Gen:
    files = context.get_input()
    entity = df.EntityId("Counter", files["key"])
    first = yield context.call_entity(entity, "add", 1)
    gate = yield context.call_activity("file_gated", files)
    total = yield context.call_entity(entity, "add", 10)
    return {"first": first, "gate": gate, "total": total}
