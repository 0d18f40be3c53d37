"""`get_agent` inside an orchestrator: typed results, typed failures, fire-and-forget signals."""

from __future__ import annotations

import pathlib
from typing import Any

import azure.durable_functions as df
from hosting_support import ROOT, finished_orchestration, make_agents

from agents.testing import ModelRequest, ModelServer, Reply
from hosting import AgentRunFailed, InvalidOperation, build_app, get_agent
from state import load_state


def orchestrator(context: Any) -> Any:
    assistant = get_agent(context, "assistant")
    signalled = assistant.signal("fire and forget", session_id="helpers")
    result = yield from assistant.run("call and wait", session_id="helpers")
    try:
        yield from assistant.run("please fail", session_id="helpers")
        failure = None
    except AgentRunFailed as error:
        failure = {"code": error.code, "status": error.status, "agent": error.agent}
    try:
        yield from assistant.run("x", session_id="bad/session")
        invalid = None
    except InvalidOperation as error:
        invalid = str(error)
    return {
        "signalled": signalled,
        "text": result.text,
        "cid": result.correlation_id,
        "failure": failure,
        "invalid": invalid,
    }


async def test_agent_handle_runs_signals_and_raises_typed_failures(
    model: ModelServer, tmp_path: pathlib.Path
) -> None:
    from devhost import LocalHost

    def handler(request: ModelRequest) -> Reply:
        text = request.last_user_text or ""
        if "fail" in text:
            return Reply.error(500, "broken", code="server_error")
        return Reply.text(f"ok: {text}")

    model.handler = handler
    app = build_app(make_agents(model))
    app.function_name("helpers_orchestrator")(
        app.orchestration_trigger(context_name="context", orchestration="helpers_orchestrator")(orchestrator)
    )
    host = LocalHost(app, tmp_path / "h", project_dir=ROOT)
    await host.start()
    try:
        client = df.DurableOrchestrationClient(host.client_binding())
        instance = await client.start_new("helpers_orchestrator")
        status = await finished_orchestration(client, instance)
        assert status.runtime_status.value == "Completed", status.output
        output = status.output
        assert output["text"] == "ok: call and wait"
        assert output["failure"]["status"] == 500 and output["failure"]["agent"] == "assistant"
        assert output["failure"]["code"] == "server_error"  # the model error's own code
        assert "bad/session" in output["invalid"]
        store = host._store
        assert store is not None  # the host is running
        stored = await store.run(store.load_state, "@dafx-assistant@helpers")
        assert stored is not None
        state = load_state(stored)
        signalled = state.find_run(output["signalled"])
        assert signalled is not None and signalled.request is not None
        assert signalled.request.orchestration_id == instance
        called = state.find_run(output["cid"])
        assert called is not None and called.request is not None
        assert called.request.orchestration_id == instance
        assert len(state.entries) == 6
    finally:
        await host.stop()
