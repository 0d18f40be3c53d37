"""Public surface and lifecycle of `agents.testing`: names, start/stop, reset, argument checks, CLI."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from openai import AsyncOpenAI, AzureOpenAI, OpenAI

import agents.testing
from agents.testing import ModelRequest, ModelServer, ModelServerError, Reply, ToolCall

ROOT = Path(__file__).resolve().parents[3]


def test_public_names() -> None:
    assert sorted(agents.testing.__all__) == [
        "DEFAULT_EMBEDDING_DIMENSIONS",
        "EmbeddingRequest",
        "Message",
        "ModelRequest",
        "ModelRoute",
        "ModelServer",
        "ModelServerError",
        "OfflineModel",
        "Reply",
        "SchemaInstanceError",
        "ToolCall",
        "ToolSpec",
        "UsageOverride",
        "count_tokens",
        "hashed_embedding",
        "offline_reply",
        "schema_instance",
        "start_offline_model_if_unconfigured",
    ]
    for name in agents.testing.__all__:
        assert getattr(agents.testing, name) is not None


def test_lifecycle_errors_and_idempotent_stop() -> None:
    server = ModelServer()
    with pytest.raises(ModelServerError, match="not started"):
        _ = server.base_url
    server.start()
    try:
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
        assert server.url == f"http://127.0.0.1:{server.port}"
        with pytest.raises(ModelServerError, match="already started"):
            server.start()
    finally:
        server.stop()
    server.stop()
    with pytest.raises(ModelServerError):
        _ = server.base_url


def test_port_in_use_is_an_os_error() -> None:
    with ModelServer() as first, pytest.raises(OSError):
        ModelServer(port=first.port).start()


def test_stop_cuts_off_a_hung_call() -> None:
    server = ModelServer(mode="scripted").start()
    server.script(Reply.hang())
    client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=30)
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        except BaseException as err:
            outcome.append(err)

    worker = threading.Thread(target=call)
    worker.start()
    while not server.requests:
        worker.join(0.01)
    server.stop()
    worker.join(10)
    assert not worker.is_alive()
    assert outcome, "the hung call must end with an error once the server stops"


async def test_async_context_manager() -> None:
    async with ModelServer() as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        async with client:
            response = await client.responses.create(model="m", input="async")
    assert response.output_text == "echo: async"


def test_reset_clears_everything(client: OpenAI, model: ModelServer) -> None:
    model.script(Reply.text("a"), Reply.text("b"))
    model.handler = lambda request: Reply.text("handled")
    first = client.responses.create(model="m", input="x")
    model.reset()
    assert model.pending_replies == 0 and model.requests == [] and model.handler is None
    with pytest.raises(Exception, match="not found"):
        client.responses.create(model="m", input="y", previous_response_id=first.id)


def test_a_route_answers_its_requests_apart_from_the_script_and_survives_reset() -> None:
    def marked(request: ModelRequest) -> bool:
        return any(m.role == "system" and m.text.startswith("[side]") for m in request.messages)

    def ask(client: OpenAI, system: str) -> str:
        answer = client.chat.completions.create(
            model="m", messages=[{"role": "system", "content": system}, {"role": "user", "content": "hi"}]
        )
        return str(answer.choices[0].message.content)

    with ModelServer(mode="scripted") as server, OpenAI(
        base_url=server.base_url, api_key="test", max_retries=0, timeout=10
    ) as client:
        side = server.route("side", marked, lambda request: Reply.text(f"side: {request.last_user_text}"))
        server.script(Reply.text("scripted"))
        assert ask(client, "[side] summarise") == "side: hi"
        assert server.pending_replies == 1  # the routed call took nothing from the script
        assert ask(client, "a turn") == "scripted"
        assert [r.messages[0].text for r in side.requests] == ["[side] summarise"]
        assert [r.messages[0].text for r in server.requests] == ["a turn"]
        server.reset()
        assert side.requests == [] and server.routed("side") is side
        assert ask(client, "[side] again") == "side: hi"
        server.unroute("side")
        assert server.routed("side") is None
        with pytest.raises(Exception, match="script exhausted"):
            ask(client, "[side] once more")


def test_azure_deployment_route(model: ModelServer) -> None:
    model.script(Reply.text("from azure route"))
    azure = AzureOpenAI(azure_endpoint=model.url, api_version="2024-10-21", api_key="k", max_retries=0)
    completion = azure.chat.completions.create(
        model="my-deployment", messages=[{"role": "user", "content": "x"}]
    )
    assert completion.choices[0].message.content == "from azure route"
    request = model.requests[0]
    assert request.path == "/openai/deployments/my-deployment/chat/completions"
    assert request.headers.get("api-key") == "k"


@pytest.mark.parametrize(
    "make",
    [
        lambda: Reply.error(200),
        lambda: Reply.error(429, retry_after=-1),
        lambda: Reply.delay(-0.1),
        lambda: Reply.tool_calls([]),
        lambda: Reply.tool_call(""),
        lambda: Reply.reasoning("x", then=Reply.hang()),
    ],
)
def test_reply_argument_errors(make: Callable[[], object]) -> None:
    with pytest.raises(ValueError):
        make()


def test_reply_constructors() -> None:
    reply = Reply.tool_calls(
        [("a", {"x": 1}), ToolCall("b", "{}", "call_b"), {"name": "c", "arguments": "[1]"}]
    )
    assert [(c.name, c.arguments, c.call_id) for c in reply.calls] == [
        ("a", '{"x": 1}', None),
        ("b", "{}", "call_b"),
        ("c", "[1]", None),
    ]
    assert reply.calls[0].parsed_arguments == {"x": 1}
    with pytest.raises(TypeError):
        Reply.tool_calls(["bad"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="mode"):
        ModelServer(mode="live")  # type: ignore[arg-type]


def test_script_rejects_non_replies(model: ModelServer) -> None:
    with pytest.raises(TypeError):
        model.script("hello")  # type: ignore[arg-type]
    assert model.pending_replies == 0


def test_command_line_serves_offline() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "agents.testing", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert f"OPENAI_BASE_URL=http://127.0.0.1:{port}/v1" in line
        with OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0) as client:
            answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "cli"}])
        assert answer.choices[0].message.content == "echo: cli"
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


def test_restart_keeps_the_port_and_ipv6_urls() -> None:
    server = ModelServer(mode="offline").start()
    port = server.port
    server.stop()
    server.start()
    try:
        assert server.port == port
        with OpenAI(base_url=server.base_url, api_key="x", max_retries=0) as client:
            assert client.responses.create(model="m", input="again").output_text == "echo: again"
    finally:
        server.stop()
    try:
        v6 = ModelServer(host="::1").start()
    except OSError:
        pytest.skip("no IPv6 loopback here")
    try:
        assert v6.base_url == f"http://[::1]:{v6.port}/v1"
        with OpenAI(base_url=v6.base_url, api_key="x", max_retries=0) as client:
            assert client.responses.create(model="m", input="v6").output_text == "echo: v6"
    finally:
        v6.stop()


def test_the_startup_hook_points_the_settings_at_a_server_that_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT", "OPENAI_CHAT_MODEL_ID"):
        monkeypatch.delenv(name, raising=False)
    handle = agents.testing.start_offline_model_if_unconfigured()
    assert isinstance(handle, agents.testing.OfflineModel)
    try:
        # Set before the server's thread has necessarily started: a call waits in the backlog.
        assert os.environ["OPENAI_BASE_URL"] == handle.base_url
        client = OpenAI(base_url=handle.base_url, api_key=os.environ["OPENAI_API_KEY"], max_retries=0)
        answer = client.chat.completions.create(model="offline", messages=[{"role": "user", "content": "hi"}])
        assert answer.choices[0].message.content
    finally:
        handle.stop()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", int(handle.base_url.split(":")[2].split("/")[0])), timeout=2)
    monkeypatch.setenv("OPENAI_API_KEY", "configured")
    assert agents.testing.start_offline_model_if_unconfigured() is None


def test_a_startup_hook_server_that_cannot_start_refuses_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: ModelServer, listening: socket.socket | None = None) -> ModelServer:
        raise RuntimeError("cannot serve")

    monkeypatch.setattr(ModelServer, "start", broken)
    handle = agents.testing.OfflineModel(stream_delay=0.0)
    handle.stop()  # waits for the failed start
    assert handle.server is None
    port = int(handle.base_url.split(":")[2].split("/")[0])
    with pytest.raises(OSError):  # refused at once, not left waiting in the backlog
        socket.create_connection(("127.0.0.1", port), timeout=2)
