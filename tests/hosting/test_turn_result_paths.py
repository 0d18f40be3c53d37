"""One stored turn, one answer: the HTTP API (GET run, POST run retried) and an orchestration
(`get_agent(...).run` and a raw `call_entity`) read the same `text`, `messages`, `usage`,
`structured` and `error` for it, because all of them come from `agents.turn_result`."""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator, Generator
from typing import Any

import azure.durable_functions as df
import pytest
from hosting_support import ROOT, Api, finished_orchestration

from agents import Agent, InputMessage, ModelSettings, RetryPolicy, TurnRequest, tool
from agents.testing import ModelServer, Reply
from hosting import AgentRunFailed, ApiSettings, build_app, entity_name, get_agent

VERDICT: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
    "additionalProperties": False,
}


@tool
def look_up(topic: str) -> str:
    """Look a topic up.

    Args:
        topic: What to look up.
    """
    return f"facts about {topic}"


def orchestrator(context: Any) -> Generator[Any, Any, dict[str, Any]]:
    """Runs one turn through `get_agent`, then asks the entity again for the same run with a raw
    `call_entity` (a redelivery: answered from the stored entries)."""
    params = context.get_input()
    agent = get_agent(context, "helper")
    session = params["session"]
    answer: dict[str, Any]
    try:
        result = yield from agent.run(
            params["message"], session_id=session, response_format=params.get("format")
        )
        answer = {"result": result.to_json()}
        correlation_id = result.correlation_id
    except AgentRunFailed as failed:
        answer = {"failed": {"correlationId": failed.correlation_id, "error": failed.failure.model_dump()}}
        correlation_id = failed.correlation_id
    again = TurnRequest(
        correlation_id=correlation_id,
        messages=[InputMessage("user", params["message"])],
        response_format=params.get("format"),
        orchestration_id=context.instance_id,
    )
    raw = yield context.call_entity(df.EntityId(entity_name("helper"), session), "run", again.to_json())
    return {**answer, "raw": raw}


@pytest.fixture
async def served(model: ModelServer, tmp_path: pathlib.Path) -> AsyncIterator[tuple[Any, Api]]:
    from devhost import LocalHost

    settings = ModelSettings(
        model="m", base_url=model.base_url, api_key="k", retry=RetryPolicy(max_attempts=1)
    )
    app = build_app(
        [Agent(name="helper", instructions="Help.", model=settings, tools=[look_up])],
        settings=ApiSettings(public_base_url="http://localhost:7071"),
    )
    app.function_name("paths_orchestrator")(
        app.orchestration_trigger(context_name="context", orchestration="paths_orchestrator")(orchestrator)
    )
    host = LocalHost(app, tmp_path / "h", project_dir=ROOT)
    await host.start()
    try:
        yield host, Api(app, host.client_binding())
    finally:
        await host.stop()


async def _orchestrate(host: Any, params: dict[str, Any]) -> dict[str, Any]:
    client = df.DurableOrchestrationClient(host.client_binding())
    instance = await client.start_new("paths_orchestrator", None, params)
    status = await finished_orchestration(client, instance)
    assert status.runtime_status.value == "Completed", status.output
    output: dict[str, Any] = status.output
    return output


def _http_response(body: dict[str, Any]) -> dict[str, Any]:
    response: dict[str, Any] = body["response"]
    return response


def _orchestration_response(result: dict[str, Any]) -> dict[str, Any]:
    return {k: result[k] for k in ("text", "messages", "usage", "structured")}


async def _every_answer(host: Any, api: Api, params: dict[str, Any]) -> dict[str, Any]:
    """The same turn as the orchestration saw it, and as HTTP GET and a retried POST answer it."""
    output = await _orchestrate(host, params)
    done = output.get("result") or output["failed"]
    cid = done["correlationId"]
    run_path = f"api/agents/helper/sessions/{params['session']}/runs/{cid}"
    got = await api.get(run_path)
    assert got.status == 200, got.body
    body: dict[str, Any] = {
        "message": params["message"],
        "session_id": params["session"],
        "correlation_id": cid,
    }
    if params.get("format") is not None:
        body["response_format"] = params["format"]
    posted = await api.post("api/agents/helper/run", json_body=body)
    return {"output": output, "get": got.json(), "post": posted}


async def test_an_answer_after_earlier_assistant_text_is_the_last_assistant_message(
    served: tuple[Any, Api], model: ModelServer
) -> None:
    # The model says something, calls a tool, then answers with an empty message: the turn's
    # `text` is the LAST assistant message's text (""), never the earlier "Let me look that up."
    host, api = served
    model.script(
        Reply.tool_calls([("look_up", {"topic": "owls"})], text="Let me look that up."),
        Reply.text(""),
    )
    seen = await _every_answer(host, api, {"session": "empty-last", "message": "owls?"})
    result = seen["output"]["result"]
    assert result["status"] == "succeeded"
    assert result["text"] == ""
    assert [m["role"] for m in result["messages"]] == ["assistant", "tool", "assistant"]
    assert seen["output"]["raw"] == result
    assert _http_response(seen["get"]) == _orchestration_response(result)
    assert seen["get"]["status"] == "succeeded"
    assert seen["post"].status == 200
    assert _http_response(seen["post"].json()) == _orchestration_response(result)


async def test_a_plain_answer_is_the_same_everywhere(served: tuple[Any, Api], model: ModelServer) -> None:
    host, api = served
    model.script(Reply.text("Owls are nocturnal."))
    seen = await _every_answer(host, api, {"session": "plain", "message": "owls?"})
    result = seen["output"]["result"]
    assert result["text"] == "Owls are nocturnal." and result["usage"] is not None
    assert seen["output"]["raw"] == result
    assert _http_response(seen["get"]) == _orchestration_response(result)
    assert _http_response(seen["post"].json()) == _orchestration_response(result)


async def test_a_structured_answer_is_the_same_everywhere(
    served: tuple[Any, Api], model: ModelServer
) -> None:
    host, api = served
    model.script(Reply.text('```json\n{"approved": true}\n```'))
    params = {"session": "structured", "message": "ok?", "format": VERDICT}
    seen = await _every_answer(host, api, params)
    result = seen["output"]["result"]
    assert result["structured"] == {"approved": True}
    assert seen["output"]["raw"] == result
    assert _http_response(seen["get"]) == _orchestration_response(result)
    assert _http_response(seen["post"].json()) == _orchestration_response(result)


async def test_a_structured_answer_escaping_a_lone_surrogate_reads_the_same_everywhere(
    served: tuple[Any, Api], model: ModelServer
) -> None:
    # The answer text is clean ASCII; only parsing it as JSON makes a lone surrogate. The turn's
    # check and the result's `structured` read it the same way (U+FFFD), so the result is storable
    # and every path answers the same.
    host, api = served
    model.script(Reply.text('{"approved": true, "note": "\\ud800"}'))
    schema = {**VERDICT, "properties": {**VERDICT["properties"], "note": {"type": "string"}}}
    seen = await _every_answer(host, api, {"session": "surrogate", "message": "ok?", "format": schema})
    result = seen["output"]["result"]
    assert result["structured"] == {"approved": True, "note": "\ufffd"}
    assert seen["output"]["raw"] == result
    assert _http_response(seen["get"]) == _orchestration_response(result)
    assert _http_response(seen["post"].json()) == _orchestration_response(result)


async def test_a_failed_turn_is_the_same_failure_everywhere(
    served: tuple[Any, Api], model: ModelServer
) -> None:
    host, api = served
    model.script(Reply.error(503, "overloaded", code="server_busy"))
    seen = await _every_answer(host, api, {"session": "failed", "message": "owls?"})
    failed = seen["output"]["failed"]
    assert failed["error"]["code"] == "server_busy" and failed["error"]["status"] == 503
    raw = seen["output"]["raw"]
    assert raw["status"] == "failed" and raw["error"] == failed["error"] and raw["text"] == ""
    assert seen["get"]["status"] == "failed"
    assert seen["get"]["error"] == failed["error"]
    assert _http_response(seen["get"]) == _orchestration_response(raw)
    problem = seen["post"].json()
    assert seen["post"].status == 502
    assert (problem["code"], problem["detail"], problem["retryable"], problem["model_status"]) == (
        failed["error"]["code"],
        failed["error"]["message"],
        failed["error"]["retryable"],
        failed["error"]["status"],
    )
