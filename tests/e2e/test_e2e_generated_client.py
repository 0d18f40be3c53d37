"""A client generated from the app's OpenAPI document (openapi-python-client, what a user would
run against /api/openapi.json) drives the real host: every answer it gets parses as the typed
value the document promises, the event stream and its 204 included, problems as `Problem`."""

from __future__ import annotations

import asyncio
import importlib
import json
import pathlib
import re
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from e2e_support import FUNCTION_KEY, HostProcess

from agents.testing import ModelServer, Reply

GENERATOR = pathlib.Path(sys.executable).parent / "openapi-python-client"
PACKAGE = "agents_api_client"


@pytest.fixture(scope="module")
def generated(e2e_host: HostProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The generated package, imported from a temp dir."""
    root = tmp_path_factory.mktemp("generated-client")
    request = urllib.request.Request(
        f"{e2e_host.url}/api/openapi.json", headers={"x-functions-key": FUNCTION_KEY}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        (root / "openapi.json").write_bytes(response.read())
    # No post hooks: the generator would format its output with ruff from PATH.
    (root / "config.json").write_text(json.dumps({"post_hooks": []}))
    done = subprocess.run(
        [
            str(GENERATOR),
            "generate",
            "--path",
            str(root / "openapi.json"),
            "--meta",
            "none",
            "--output-path",
            str(root / PACKAGE),
            "--config",
            str(root / "config.json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def _api(generated: Any, name: str) -> Any:
    return importlib.import_module(f"{generated.__name__}.api.agents.{name}")


def _models(generated: Any) -> Any:
    return importlib.import_module(f"{generated.__name__}.models")


async def test_a_generated_client_parses_every_answer_of_a_turn_its_stream_and_its_problems(
    generated: Any, e2e_host: HostProcess, model: ModelServer
) -> None:
    model.handler = lambda request: Reply.text("hello there")
    models = _models(generated)
    client = generated.Client(base_url=e2e_host.url, headers={"x-functions-key": FUNCTION_KEY}, timeout=60)
    agent = models.AgentRunPostAgent("assistant")
    session = f"gen-{uuid.uuid4().hex[:8]}"
    path = (models.AgentRunStatusGetAgent("assistant"), session)

    ran = await _api(generated, "agent_run_post").asyncio_detailed(
        agent, client=client, body=models.RunRequestBody(message="hi", session_id=session)
    )
    assert ran.status_code == 200 and isinstance(ran.parsed, models.RunResultBody), ran.content[:300]
    correlation = ran.parsed.correlation_id
    status = await _api(generated, "agent_run_status_get").asyncio_detailed(*path, correlation, client=client)
    assert isinstance(status.parsed, models.RunResultBody) and status.parsed.status.value == "succeeded"

    stream = _api(generated, "agent_run_stream_get")
    stream_agent = models.AgentRunStreamGetAgent("assistant")
    events = await stream.asyncio_detailed(stream_agent, session, correlation, client=client)
    # The event stream is the caller's SSE reader's to parse: the client hands over the body.
    assert events.status_code == 200 and events.parsed is None, events.content[:300]
    ids = re.findall(r"^id: (\d+)\nevent: (\S+)$", events.content.decode(), re.M)
    assert ids and ids[-1][1] == "run.completed", events.content
    last = ids[-1][0]
    after = await stream.asyncio_detailed(
        stream_agent, session, correlation, client=client, last_event_id=last
    )
    assert after.status_code == 204 and after.parsed is None

    read = await _api(generated, "agent_session_get").asyncio_detailed(
        models.AgentSessionGetAgent("assistant"), session, client=client
    )
    assert isinstance(read.parsed, models.SessionBody)
    listed = await _api(generated, "agent_sessions_get").asyncio_detailed(
        models.AgentSessionsGetAgent("assistant"), client=client
    )
    assert isinstance(listed.parsed, models.SessionsPageBody)

    reset = await _api(generated, "agent_session_reset_post").asyncio_detailed(
        models.AgentSessionResetPostAgent("assistant"), session, client=client
    )
    assert reset.status_code == 202 and isinstance(reset.parsed, models.SessionActionBody)
    for _ in range(200):
        status = await _api(generated, "agent_run_status_get").asyncio_detailed(
            *path, correlation, client=client
        )
        if status.status_code == 410:
            break
        await asyncio.sleep(0.05)
    assert status.status_code == 410 and isinstance(status.parsed, models.Problem), status.content[:300]
    assert status.parsed.code == "run_discarded"
    retry = await _api(generated, "agent_run_post").asyncio_detailed(
        agent,
        client=client,
        body=models.RunRequestBody(message="hi", session_id=session, correlation_id=correlation),
    )
    assert retry.status_code == 410 and isinstance(retry.parsed, models.Problem)
    missing = await _api(generated, "agent_session_get").asyncio_detailed(
        models.AgentSessionGetAgent("assistant"), f"none-{uuid.uuid4().hex[:8]}", client=client
    )
    assert missing.status_code == 404 and isinstance(missing.parsed, models.Problem)


async def test_a_generated_client_parses_the_user_routes(
    generated: Any, e2e_host: HostProcess, model: ModelServer
) -> None:
    model.handler = lambda request: Reply.text("hello there")
    models = _models(generated)
    client = generated.Client(base_url=e2e_host.url, headers={"x-functions-key": FUNCTION_KEY}, timeout=60)
    user = f"gen-{uuid.uuid4().hex[:8]}"

    def users(name: str) -> Any:
        return importlib.import_module(f"{generated.__name__}.api.users.{name}")

    listed = await users("user_memories_get").asyncio_detailed(user, client=client, limit=5, q="aisle")
    assert listed.status_code == 200 and isinstance(listed.parsed, models.MemoriesPageBody), listed.content
    assert listed.parsed.items == [] and listed.parsed.cursor is None
    mine = await users("my_memories_get").asyncio_detailed(client=client, user_id=user)
    assert isinstance(mine.parsed, models.MemoriesPageBody) and mine.parsed.user_id == user
    gone = await users("user_memory_delete").asyncio_detailed(user, "0" * 32, client=client)
    assert gone.status_code == 404 and isinstance(gone.parsed, models.Problem)
    assert gone.parsed.code == "memory_not_found"
    exported = await users("user_export_get").asyncio_detailed(user, client=client)
    # NDJSON is the caller's to read line by line: the client hands over the body.
    assert exported.status_code == 200 and exported.parsed is None
    kinds = [json.loads(line)["kind"] for line in exported.content.decode().splitlines()]
    assert kinds == ["user", "end"]
