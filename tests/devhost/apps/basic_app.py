"""A small real DFApp for the local host's tests: HTTP routes, a durable client, an entity."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import azure.durable_functions as df
import azure.functions as func

app = df.DFApp(http_auth_level=func.AuthLevel.ANONYMOUS)


def _json(value: Any, status: int = 200) -> func.HttpResponse:
    return func.HttpResponse(json.dumps(value), status_code=status, mimetype="application/json")


@app.route(route="hello/{name}", methods=["GET"])
def hello(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse(f"hello {req.route_params['name']}")


@app.route(route="items/{id:int}/{label?}", methods=["GET", "POST"])
async def items(req: func.HttpRequest) -> func.HttpResponse:
    return _json({"route": dict(req.route_params), "method": req.method})


@app.route(route="items/special", methods=["GET"])
def special_item(req: func.HttpRequest) -> func.HttpResponse:
    return _json({"special": True})


@app.route(route="echo", methods=["POST", "PUT"])
def echo(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse(
        req.get_body(),
        status_code=201,
        headers={"X-Echo-Query": json.dumps(dict(req.params)),
                 "X-Echo-Header": req.headers.get("x-custom", ""),
                 "X-Echo-Url": req.url},
        mimetype="application/octet-stream",
    )


@app.route(route="secure", auth_level=func.AuthLevel.FUNCTION)
def secure(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse("secret")


@app.route(route="boom")
def boom(req: func.HttpRequest) -> func.HttpResponse:
    raise RuntimeError("kaboom")


@app.route(route="counter/{key}/{op}", methods=["POST"])
@app.durable_client_input(client_name="client")
async def signal_counter(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    entity = df.EntityId("Counter", req.route_params["key"])
    body = req.get_body()
    await client.signal_entity(entity, req.route_params["op"], json.loads(body) if body else None)
    return func.HttpResponse(status_code=202)


@app.route(route="counter/{key}", methods=["GET"])
@app.durable_client_input(client_name="client")
async def read_counter(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    state = await client.read_entity_state(df.EntityId("Counter", req.route_params["key"]))
    if not state.entity_exists:
        return _json({"exists": False}, status=404)
    return _json({"exists": True, "state": state.entity_state})


@app.route(route="binding", methods=["GET"])
@app.durable_client_input(client_name="client")
async def binding(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    return _json(client.create_http_management_payload("abc"))


def _counter(context: df.DurableEntityContext) -> None:
    op = context.operation_name
    state = context.get_state(lambda: {"total": 0, "log": []})
    value = context.get_input()
    if op == "add":
        state["total"] += int(value)
        state["log"].append(value)
    elif op == "append":
        state["log"].append(value)
    elif op == "slow_append":
        if value.get("marker"):  # lets a test see that the operation started (and how often)
            with open(value["marker"], "a", encoding="utf-8") as marker:
                marker.write("started\n")
        time.sleep(float(value["sleep"]))
        state["log"].append(value["item"])
    elif op == "grow":
        state["blob"] = "x" * int(value)
    elif op == "fail":
        raise ValueError(f"refused: {value}")
    elif op == "sdk_fails_once":
        state["total"] += int(value["amount"])
        state["log"].append(value["amount"])
        if not os.path.exists(value["marker"]):
            with open(value["marker"], "w", encoding="utf-8") as marker:
                marker.write("failed\n")
            context.set_state(state)
            context.set_result(object())  # the SDK cannot serialize it: the whole invocation fails
            return
    elif op == "get":
        context.set_result(state)
        return
    elif op == "delete":
        context.destruct_on_exit()
        return
    else:
        raise KeyError(f"unknown operation {op}")
    context.set_state(state)
    context.set_result(state["total"])


@app.entity_trigger(context_name="context")
def Counter(context: df.DurableEntityContext) -> None:
    _counter(context)


@app.route(route="flows/{name}", methods=["POST"])
@app.durable_client_input(client_name="client")
async def start_flow(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    body = req.get_body()
    instance_id = await client.start_new(req.route_params["name"], None, json.loads(body) if body else None)
    return client.create_check_status_response(req, instance_id)


@app.orchestration_trigger(context_name="context")
def approval_flow(context: df.DurableOrchestrationContext) -> Any:
    request = context.get_input()
    context.set_custom_status("waiting")
    decision = yield context.wait_for_external_event("approve")
    total = yield context.call_entity(df.EntityId("Counter", request["key"]), "add", decision["amount"])
    return {"approved_by": decision["by"], "total": total}


@app.orchestration_trigger(context_name="context")
def entity_error_flow(context: df.DurableOrchestrationContext) -> Any:
    try:
        yield context.call_entity(df.EntityId("Counter", "flow-errors"), "fail", "from orchestration")
    except Exception as exc:
        return {"caught": str(exc)}
    return {"caught": None}


@app.orchestration_trigger(context_name="context")
def failing_flow(context: df.DurableOrchestrationContext) -> Any:
    yield context.call_entity(df.EntityId("Counter", "flow-fails"), "fail", "boom")
    return None


@app.generic_trigger(arg_name="context", type="entityTrigger", entityName="forwarder")
def forwarder_entity(context: func.EntityContext) -> str:
    """A raw batch handler (as other SDKs write them): its batch output carries a signal."""
    request = json.loads(context.body)
    return json.dumps({
        "entityExists": True,
        "entityState": json.dumps({"forwarded": len(request["batch"]), "request": request}),
        "results": [{"isError": False, "result": "null", "duration": 0} for _ in request["batch"]],
        "signals": [{"target": {"name": "Counter", "key": "target"}, "name": "add",
                     "input": json.dumps(json.dumps(5))}],
    })


@app.generic_trigger(arg_name="context", type="entityTrigger", entityName="batches")
def batches_entity(context: func.EntityContext) -> str:
    """A raw batch handler that records how many operations each batch it is given holds; a
    `hold` operation sleeps for its input's seconds, so that later operations queue up."""
    request = json.loads(context.body)
    sizes = json.loads(request["state"])["sizes"] if request.get("state") else []
    for operation in request["batch"]:
        if operation["name"] == "hold":
            held = json.loads(operation["input"])
            time.sleep(float(json.loads(held) if isinstance(held, str) else held))
    sizes.append(len(request["batch"]))
    return json.dumps({
        "entityExists": True,
        "entityState": json.dumps({"sizes": sizes}),
        "results": [{"isError": False, "result": "null", "duration": 0} for _ in request["batch"]],
        "signals": [],
    })


@app.timer_trigger(schedule="0 */5 * * * *", arg_name="timer", run_on_startup=False)
def every_five_minutes(timer: func.TimerRequest) -> None:
    """Not run by the local host; listed as unsupported at startup."""


@app.route(route="slow/{seconds}", methods=["GET"])
async def slow(req: func.HttpRequest) -> func.HttpResponse:
    import asyncio

    await asyncio.sleep(float(req.route_params["seconds"]))
    return func.HttpResponse("finally")
