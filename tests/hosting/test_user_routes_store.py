"""The user routes without a usable memory store: on Azure (`WEBSITE_INSTANCE_ID` set) with no
`DURABLE_AGENTS_MEMORY_PATH` the app's store cannot be opened, and the routes answer 503
`storage_unavailable` naming the setting, before anything is read."""

from __future__ import annotations

import json

import azure.functions as func
import pytest

import agents.memory._settings as memory_settings
from hosting import ApiSettings
from hosting.http import guarded
from hosting.http._memories import UserMemories


@pytest.fixture
def azure_without_a_memory_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory_settings, "_default", None)  # this process's store, not made yet
    # Nor the settings an app built earlier in this process gave (build_app hands them over).
    monkeypatch.setattr(memory_settings, "_configured", None)
    for name in ("AzureWebJobsStorage", memory_settings.MEMORY_STORE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WEBSITE_INSTANCE_ID", "instance-1")
    monkeypatch.delenv(memory_settings.MEMORY_PATH_ENV, raising=False)


@pytest.mark.usefixtures("azure_without_a_memory_path")
@pytest.mark.parametrize("method", ["GET", "DELETE"])
async def test_no_memory_store_is_a_503_naming_the_setting(method: str) -> None:
    memories = UserMemories(ApiSettings())
    route = {"user_id": "u1"} if method == "GET" else {"user_id": "u1", "memory_id": "m1"}
    handler = guarded(memories.list if method == "GET" else memories.delete)
    url = "http://localhost/api/users/u1/memories"
    req = func.HttpRequest(method=method, url=url, body=b"", route_params=route)
    answer = await handler(req, None)
    assert isinstance(answer, func.HttpResponse)
    problem = json.loads(answer.get_body())
    assert answer.status_code == 503 and problem["code"] == "storage_unavailable", problem
    assert memory_settings.MEMORY_PATH_ENV in problem["detail"]
    assert memory_settings._default is None  # nothing was opened
