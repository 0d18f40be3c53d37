"""The HTTP side's check of a stored state, and the size it measures for the turn's size limit."""

from __future__ import annotations

import json
import math
import pathlib
from typing import Any

import aiohttp
import azure.durable_functions as df
import pytest
from aiohttp import web
from azure.durable_functions.models.EntityStateResponse import EntityStateResponse

from hosting.client import BoundClient
from hosting.client._read import Unparsable, checked_state, read_session, state_problem
from hosting.stored import StoredDocument

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "state" / "fixtures"


def test_the_check_measures_the_size_the_limit_counts() -> None:
    # Non-ASCII text counts in UTF-8 bytes, as StoredDocument.size_bytes (the sessions list's
    # figure) counts it: the check's size replaces a second serialisation in each turn's submit.
    for path in sorted(FIXTURES.glob("state-*.json")):
        document = json.loads(path.read_bytes())
        checked = checked_state(document)
        assert checked.problem is None, path.name
        assert checked.size_bytes == StoredDocument(document).size_bytes() > 0, path.name


def test_a_state_the_entity_would_refuse_has_a_problem_and_no_size() -> None:
    document = json.loads((FIXTURES / "state-1.0.0-seed-sample.json").read_bytes())
    document["schemaVersion"] = "2.0.0"  # a major version this build cannot read
    checked = checked_state(document)
    assert checked.problem is not None and "2.0.0" in checked.problem
    assert checked.size_bytes == 0 and state_problem(document) == checked.problem
    unparsable = "the state is not valid JSON: x"
    assert checked_state(Unparsable(unparsable)).problem == unparsable


def _binding(rpc_base_url: str) -> str:
    return json.dumps(
        {"taskHubName": "hub", "creationUrls": {}, "managementUrls": {}, "rpcBaseUrl": rpc_base_url}
    )


class _SdkOnlyClient:
    """A durable client without `rpcBaseUrl`: its reads go through `read_entity_state`, whose
    document a lenient parser (the SDK's json.loads) produced."""

    rpc_base_url = None

    def __init__(self, document: Any) -> None:
        self.document = document

    async def read_entity_state(self, entity_id: df.EntityId) -> Any:
        return EntityStateResponse(self.document is not None, self.document)


async def test_nan_in_a_stored_state_is_refused_whichever_way_it_is_read() -> None:
    # NaN and Infinity are not JSON: the entity's parser refuses them, so a reader must too,
    # whether the state came as text from the backend's HTTP API or parsed by the SDK.
    seed = (FIXTURES / "state-1.0.0-seed-sample.json").read_text()
    text = seed.replace('"data": {', '"data": {"ttl": NaN, ', 1)
    assert "NaN" in text
    served: list[str] = []

    async def entity(request: web.Request) -> web.Response:
        served.append(request.match_info["key"])
        if request.match_info["key"] == "missing":
            return web.Response(status=404)
        if request.match_info["key"] == "broken":
            return web.Response(status=500)
        if request.match_info["key"] == "twice":  # the state's text as a JSON string
            return web.Response(text=json.dumps(seed), content_type="application/json")
        return web.Response(text=text, content_type="application/json")

    app = web.Application()
    app.router.add_get("/rpc/entities/{name}/{key}", entity)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = runner.addresses[0][1]
        client = BoundClient(_binding(f"http://127.0.0.1:{port}/rpc/"))
        over_http = await read_session(client, df.EntityId("dafx-assistant", "a b/c"))
        assert served[0] == "a b/c"  # the key travels quoted, and arrives whole
        assert over_http.exists and isinstance(over_http.document, Unparsable)
        assert "not valid JSON" in over_http.document.reason
        assert not (await read_session(client, df.EntityId("dafx-assistant", "missing"))).exists
        twice = await read_session(client, df.EntityId("dafx-assistant", "twice"))
        assert twice.exists and twice.document == json.loads(seed)
        with pytest.raises(aiohttp.ClientResponseError) as failed:
            await read_session(client, df.EntityId("dafx-assistant", "broken"))
        assert failed.value.status == 500
    finally:
        await runner.cleanup()
    document = json.loads(text)  # the SDK's parser admits NaN
    assert math.isnan(document["data"]["ttl"])
    sdk_only: Any = _SdkOnlyClient(document)  # reads only: the rest of DurableClient is never called
    through_sdk = await read_session(sdk_only, df.EntityId("dafx-assistant", "s"))
    assert through_sdk.exists and isinstance(through_sdk.document, Unparsable)
    assert through_sdk.document.reason == over_http.document.reason
    sdk_only = _SdkOnlyClient(None)
    assert not (await read_session(sdk_only, df.EntityId("dafx-assistant", "s"))).exists
