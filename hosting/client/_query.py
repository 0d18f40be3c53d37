"""The Durable extension's entity and instance queries, called over the durable client binding's
`rpcBaseUrl`.

The Python durable client has no entity query, so this calls the extension's own HTTP API
(`GET entities/{name}?fetchState=..&top=N[&lastOperationTimeTo=T]`, the continuation token in the
`x-ms-continuation-token` header both ways), the endpoint the .NET client's `ListEntitiesAsync`
is served by. The sessions list (hosting.http._sessions) and the expiry sweeper (hosting.lifecycle._sweeper)
both page through it. Its instance query (`get_status_by`) cannot page, so the instance query by id
prefix (`GET instances?instanceIdPrefix=..&top=N`, same header) is called here too: the sweeper
purges its finished checks through it and the review example lists its instances with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp

from .._errors import HostingError
from ._binding import DurableClient, rpc_base_url
from ._rpc import rpc_session

CONTINUATION_HEADER = "x-ms-continuation-token"


class NoQueryEndpoint(HostingError):
    """The durable client binding carries no `rpcBaseUrl`: the entity query cannot be called."""


class ContinuationRefused(HostingError):
    """The durable backend refused a continuation token (it may have expired)."""


def entity_key(item: dict[str, Any]) -> str | None:
    """The key (session id) of one entity query item, or None when the item has none."""
    entity = item.get("entityId")
    key = entity.get("key") if isinstance(entity, dict) else None
    return key if isinstance(key, str) else None


async def query_entities(
    client: DurableClient,
    entity: str,
    *,
    top: int,
    continuation: str | None = None,
    fetch_state: bool = False,
    operated_before: datetime | None = None,
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of the entities named `entity` (the extension's query items: `entityId`,
    `lastOperationTime`, `state` when fetched), only those last operated on at or before
    `operated_before` when given, and the backend's token of the next page. Raises
    `NoQueryEndpoint` and `ContinuationRefused`; the backend's other failures as aiohttp's."""
    query: dict[str, str | int] = {"fetchState": "true" if fetch_state else "false", "top": top}
    if operated_before is not None:
        query["lastOperationTimeTo"] = operated_before.astimezone(UTC).isoformat()
    return await _get_page(client, f"entities/{quote(entity, safe='')}", query, continuation)


async def query_instances(
    client: DurableClient,
    prefix: str,
    *,
    top: int,
    continuation: str | None = None,
    runtime_status: Sequence[str] = (),
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of the orchestration instances whose id starts with `prefix` (the extension's
    status items: `instanceId`, `name`, `runtimeStatus`, `createdTime`, ...), only those in one of
    `runtime_status` when given, and the backend's token of the next page.

    The SDK's `get_status_by` takes the prefix but sends no page size and drops the continuation
    token, so it sees only the backend's first page (100 instances, which on Azure Storage may
    also be entity rows and other instances when filtered by status alone); this pages. Raises
    `NoQueryEndpoint` and `ContinuationRefused`; the backend's other failures as aiohttp's."""
    query: dict[str, str | int] = {"instanceIdPrefix": prefix, "top": top, "showInput": "false"}
    if runtime_status:
        query["runtimeStatus"] = ",".join(runtime_status)
    return await _get_page(client, "instances", query, continuation)


async def _get_page(
    client: DurableClient, path: str, query: dict[str, str | int], continuation: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of a query of the extension's HTTP API (`path` under `rpcBaseUrl`)."""
    base = rpc_base_url(client)
    if base is None:
        raise NoQueryEndpoint("the durable client binding carries no rpcBaseUrl to query")
    url = f"{base}{path}?{urlencode(query)}"
    headers = {CONTINUATION_HEADER: continuation} if continuation else {}
    async with rpc_session().get(url, headers=headers) as resp:
        if resp.status == 400 and continuation:
            raise ContinuationRefused(
                "the durable backend refused the continuation token (it may have expired)"
            )
        if resp.status != 200:
            raise aiohttp.ClientResponseError(
                resp.request_info, (), status=resp.status, message=f"query of {path} failed"
            )
        items = await resp.json(content_type=None)
        next_token = resp.headers.get(CONTINUATION_HEADER) or None
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else [], next_token
