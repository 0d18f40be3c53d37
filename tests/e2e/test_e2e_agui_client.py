"""The AG-UI route driven by the protocol's own TypeScript client (`@ag-ui/client`'s HttpAgent,
installed by `make services` into .tools/), in node, as a CopilotKit front end drives an agent: the
client verifies the event sequence itself and assembles the messages; a thread is one durable
session, continued by the client's next run and readable over the product's own API."""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
from typing import Any

import aiohttp
from e2e_support import FUNCTION_KEY, REPO, HostProcess

from agents.testing import ModelServer, Reply

AGENT = "assistant"
TOOLS = REPO / ".tools"
SCRIPT = REPO / "tests" / "e2e" / "agui_client.cjs"


async def run_client(host: HostProcess, thread: str, run: str, message: str) -> dict[str, Any]:
    node = shutil.which("node")
    assert node is not None, "node is not on PATH"
    installed = (TOOLS / "node_modules" / "@ag-ui" / "client").is_dir()
    assert installed, "run `make services` (it installs @ag-ui/client)"
    url = f"{host.url}/api/agents/{AGENT}/ag-ui"
    process = await asyncio.create_subprocess_exec(
        node, str(SCRIPT), str(TOOLS), url, FUNCTION_KEY, thread, run, message,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return result


def types(result: dict[str, Any]) -> list[str]:
    return [event["type"] for event in result["events"]]


def text_of(result: dict[str, Any]) -> str:
    return "".join(e["delta"] for e in result["events"] if e["type"] == "TEXT_MESSAGE_CONTENT")


async def test_the_protocols_client_runs_and_continues_a_thread(
    e2e_host: HostProcess, model: ModelServer
) -> None:
    thread = f"agui-{uuid.uuid4().hex[:8]}"
    model.stream_delay = 0.005
    model.script(Reply.text("Nice to meet you, Ada."), Reply.text("You are Ada."))
    first = await run_client(e2e_host, thread, str(uuid.uuid4()), "My name is Ada.")
    assert first["ok"], first
    kinds = types(first)
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED", kinds
    assert {"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"} <= set(kinds), kinds
    assert first["events"][0]["threadId"] == thread
    assert text_of(first) == "Nice to meet you, Ada."
    assistant = [m for m in first["newMessages"] if m["role"] == "assistant"]
    assert [m["content"] for m in assistant] == ["Nice to meet you, Ada."]

    second = await run_client(e2e_host, thread, str(uuid.uuid4()), "Who am I?")
    assert second["ok"], second
    assert text_of(second) == "You are Ada."
    said = [(m.role, m.text) for m in model.requests[-1].messages if m.role not in ("system", "developer")]
    assert said == [
        ("user", "My name is Ada."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "Who am I?"),
    ]

    # The thread is the product's own session: its two turns are there over the HTTP API.
    url = f"{e2e_host.url}/api/agents/{AGENT}/sessions/{thread}"
    async with (
        aiohttp.ClientSession(headers={"x-functions-key": FUNCTION_KEY}) as http,
        http.get(url) as answer,
    ):
        assert answer.status == 200, await answer.text()
        session = await answer.json()
    assert len(session["turns"]) == 2, session


async def test_a_failed_run_reaches_the_client_as_run_error(
    e2e_host: HostProcess, model: ModelServer
) -> None:
    model.script(Reply.error(400, "The prompt was refused.", code="content_filter"))
    result = await run_client(e2e_host, f"agui-{uuid.uuid4().hex[:8]}", str(uuid.uuid4()), "Hi")
    kinds = types(result)
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_ERROR", kinds
    assert "RUN_FINISHED" not in kinds
