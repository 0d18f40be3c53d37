"""The durable client binding, declared and read through public APIs only.

The SDK's `durable_client_input` hands the function a `DurableOrchestrationClient` built from the
binding JSON and drops the JSON, so the binding's `rpcBaseUrl` (the extension's HTTP API, which
hosting calls for the entity query) would only be reachable through the client's private fields.
`durable_client_input` here declares the same `durableClient` binding with the public
`generic_input_binding` and builds a `BoundClient`: the SDK's client plus the `rpcBaseUrl` read
from the JSON the Functions host passes.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import azure.durable_functions as df

BINDING_TYPE = "durableClient"


def _rpc_base_url(binding: str) -> str | None:
    try:
        document = json.loads(binding)
    except ValueError:
        return None
    base = document.get("rpcBaseUrl") if isinstance(document, dict) else None
    return base if isinstance(base, str) and base else None


class DurableClient(Protocol):
    """What hosting calls on the durable client (`BoundClient`; tests may pass their own)."""

    @property
    def rpc_base_url(self) -> str | None: ...

    async def signal_entity(
        self, entityId: df.EntityId, operation_name: str, operation_input: Any = None
    ) -> None: ...

    async def read_entity_state(self, entityId: df.EntityId) -> Any: ...

    async def start_new(
        self, orchestration_function_name: str, instance_id: str | None = None, client_input: Any = None
    ) -> str: ...

    async def purge_instance_history(self, instance_id: str) -> Any: ...

    async def raise_event(self, instance_id: str, event_name: str, event_data: Any = None) -> None: ...

    async def terminate(self, instance_id: str, reason: str) -> None: ...


class BoundClient(df.DurableOrchestrationClient):
    """The SDK's durable client, with the base URL of the extension's HTTP API it is bound to."""

    def __init__(self, binding: str, function_invocation_id: str | None = None) -> None:
        super().__init__(binding, function_invocation_id)
        self.rpc_base_url: str | None = _rpc_base_url(binding)
        """The binding's `rpcBaseUrl`, None when it carries none."""


def rpc_base_url(client: Any) -> str | None:
    """The base URL of the extension's HTTP API the durable client `client` is bound to (its
    binding's `rpcBaseUrl`), or None when the binding carries none."""
    return client.rpc_base_url if isinstance(client, BoundClient) else None


def durable_client_input(
    app: df.DFApp, function: Callable[..., Awaitable[Any]], client_name: str = "client"
) -> Any:
    """`function` with a durable client binding on its parameter `client_name`, which receives a
    `BoundClient`. What the worker sees of that parameter is `str` (the binding JSON): the
    only type it accepts for a durableClient binding."""

    @functools.wraps(function)
    async def with_client(*args: Any, **kwargs: Any) -> Any:
        context = kwargs.get("context")
        invocation_id = getattr(context, "invocation_id", None)
        kwargs[client_name] = BoundClient(kwargs[client_name], invocation_id)
        return await function(*args, **kwargs)

    with_client.__annotations__ = {**function.__annotations__, client_name: str}
    return app.generic_input_binding(arg_name=client_name, type=BINDING_TYPE)(with_client)
