"""Helpers of the hosting tests: agents bound to the local model server, and drivers of the app's
real functions (entity batches through the JSON batch protocol, HTTP requests with real
`azure.functions.HttpRequest` objects, matched by route and method as the Functions host does)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import json
import pathlib
import re
import uuid
from dataclasses import dataclass
from typing import Any

import azure.durable_functions as df
import azure.functions as func
import pytest
from pydantic import BaseModel, ConfigDict

import hosting._settings
from agents import Agent, ModelSettings, RetryPolicy
from agents.testing import ModelServer
from devhost import list_functions

ROOT = pathlib.Path(__file__).resolve().parents[2]


class Verdict(BaseModel):
    """The reviewer's structured output in these tests."""

    model_config = ConfigDict(extra="forbid")
    approved: bool
    feedback: str


def make_agents(server: ModelServer) -> list[Agent]:
    """Agents talking to the local model server; no retries, so scripted failures fail at once."""
    settings = ModelSettings(
        model="test-model", base_url=server.base_url, api_key="test-key", retry=RetryPolicy(max_attempts=1)
    )
    return [
        Agent(name="assistant", instructions="Be helpful.", model=settings, description="plain"),
        Agent(name="writer", instructions="Write.", model=settings),
        Agent(name="reviewer", instructions="Review.", model=settings, response_format=Verdict),
    ]


all_functions = list_functions
"""`app.get_functions()`, callable more than once (the local host indexes the same app)."""


def functions(app: df.DFApp) -> dict[str, Any]:
    """The app's functions by name."""
    return {f.get_function_name(): f for f in all_functions(app)}


# -- entities through the JSON batch protocol ----------------------------------------------------


def encode_input(value: Any) -> str | None:
    """An operation input as the Durable extension sends it (the JSON text of its JSON text)."""
    return None if value is None else json.dumps(json.dumps(value))


@dataclass
class OpResult:
    is_error: bool
    value: Any


@dataclass
class BatchOutput:
    exists: bool
    state: str | None
    results: list[OpResult]


def batch_request(
    entity: str, key: str, state: str | None, operations: list[tuple[str, Any]]
) -> dict[str, Any]:
    """The JSON batch request the extension sends an entity function (as a parsed document)."""
    return {
        "self": {"name": entity, "key": key},
        "exists": state is not None,
        "state": state,
        "batch": [
            {"id": str(uuid.uuid4()), "name": name, "signal": True, "input": encode_input(value)}
            for name, value in operations
        ],
    }


def call_entity(handle: Any, request: str) -> str:
    """One call of an entity function (a coroutine function, as the worker runs it on its loop),
    waited for here; on a thread of its own, so that a test already inside a loop can call it too."""
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        answer: str = thread.submit(asyncio.run, handle(request)).result()
    return answer


def run_batch(
    app: df.DFApp, entity: str, key: str, state: str | None, operations: list[tuple[str, Any]]
) -> BatchOutput:
    """Run operations as one batch through the entity function, the way the extension calls it."""
    context = batch_request(entity, key, state, operations)
    handle = functions(app)[entity].get_user_function()
    output = json.loads(call_entity(handle, json.dumps(context)))
    results = [OpResult(r["isError"], json.loads(r["result"])) for r in output["results"]]
    return BatchOutput(output["entityExists"], output["entityState"], results)


def run_op(message: str, correlation_id: str | None = None, **extra: Any) -> dict[str, Any]:
    """The input of a `run` operation."""
    return {
        "correlationId": correlation_id or uuid.uuid4().hex,
        "messages": [{"role": "user", "text": message}],
        **extra,
    }


# -- HTTP through the app's functions ----------------------------------------------------------


def _route_regex(template: str) -> re.Pattern[str]:
    pattern = re.sub(r"\\{(\w+)\\}", r"(?P<\1>[^/]+)", re.escape(template))
    return re.compile(pattern)


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes
    mimetype: str

    def json(self) -> Any:
        return json.loads(self.body)


class Api:
    """Calls the app's HTTP functions with real `func.HttpRequest` objects, matched by route and
    method like the Functions host does, with a durable client binding from the local host."""

    def __init__(self, app: df.DFApp, binding: str | None) -> None:
        self.binding = binding
        self.routes: list[tuple[re.Pattern[str], set[str], Any, bool]] = []
        for function in all_functions(app):
            trigger = function.get_trigger()
            if getattr(trigger, "route", None) is None:
                continue
            methods = {str(getattr(m, "value", m)).upper() for m in trigger.methods}
            bindings = [json.loads(b) for b in function.get_raw_bindings()]
            needs_client = any(b["type"] == "durableClient" for b in bindings)
            self.routes.append(
                (_route_regex("api/" + trigger.route), methods, function.get_user_function(), needs_client)
            )

    async def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        body: bytes | str | None = None,
        headers: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
        origin: str = "http://localhost:7071",
    ) -> Response:
        headers = dict(headers or {})
        if json_body is not None:
            body = json.dumps(json_body)
            headers.setdefault("Content-Type", "application/json")
        raw = body.encode() if isinstance(body, str) else (body or b"")
        path = path.lstrip("/")
        for pattern, methods, handler, needs_client in self.routes:
            match = pattern.fullmatch(path)
            if match is None or method.upper() not in methods:
                continue
            req = func.HttpRequest(
                method=method.upper(),
                url=f"{origin}/{path}",
                headers=headers,
                params=params or {},
                route_params=match.groupdict(),
                body=raw,
            )
            kwargs: dict[str, Any] = {"req": req}
            if needs_client:
                kwargs["client"] = self.binding
            if "context" in inspect.signature(handler).parameters:
                kwargs["context"] = None  # no host invocation: no trace context to hand over
            response: func.HttpResponse = await handler(**kwargs)
            return Response(
                response.status_code,
                {k.lower(): v for k, v in response.headers.items()},
                response.get_body(),
                response.mimetype,
            )
        raise AssertionError(f"no function serves {method} {path}")

    async def get(self, path: str, **kwargs: Any) -> Response:
        return await self.request("GET", path, **kwargs)

    async def post(self, path: str, **kwargs: Any) -> Response:
        return await self.request("POST", path, **kwargs)

    async def delete(self, path: str, **kwargs: Any) -> Response:
        return await self.request("DELETE", path, **kwargs)


async def stored_state(host: Any, agent: str, session: str) -> str:
    """The state text the host committed for a session (which must have one)."""
    text: str | None = await host._store.run(host._store.load_state, f"@dafx-{agent}@{session}")
    assert text is not None, f"no state stored for {agent}/{session}"
    return text


async def finished_orchestration(client: Any, instance: str, timeout: float = 20.0) -> Any:
    """The status of orchestration `instance` once it has completed or failed (polled)."""
    import asyncio

    for _ in range(int(timeout / 0.05)):
        status = await client.get_status(instance)
        if status.runtime_status and status.runtime_status.value in ("Completed", "Failed"):
            return status
        await asyncio.sleep(0.05)
    raise AssertionError(f"orchestration {instance} did not finish in {timeout} s")


def set_app_setting(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    """Set an app setting for an app already built, as a restart would: the app reads its settings
    once, at startup, so they are read again here (and restored after the test)."""
    monkeypatch.setenv(name, value)
    monkeypatch.setattr(hosting._settings, "_installed", hosting._settings.HostingSettings.load())
