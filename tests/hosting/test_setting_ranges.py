"""Numeric app settings are range-checked when the app is built, with a message naming the setting;
and a run whose turn was sent keeps its ids in the answer, whatever fails after the signal."""

from __future__ import annotations

from typing import Any

import pytest
from hosting_support import Api, make_agents

from agents.testing import ModelServer, Reply
from hosting import build_app
from hosting._errors import HostingConfigurationError

HUGE = "9" * 20


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DURABLE_AGENTS_SESSION_TTL", "1e17"),  # past what a date can hold: every request a 500
        ("DURABLE_AGENTS_SESSION_TTL__assistant", "1e17"),
        ("DURABLE_AGENTS_SESSION_TTL", "nan"),
        ("DURABLE_AGENTS_SESSION_TTL", "\u0663"),
        ("DURABLE_AGENTS_MAX_SESSION_BYTES", HUGE),
        ("DURABLE_AGENTS_MAX_SESSION_BYTES", "\u0663\u0660\u0660\u0660"),
        ("DURABLE_AGENTS_ARCHIVE_AT_BYTES", HUGE),
        ("DURABLE_AGENTS_ARCHIVE_KEEP_BYTES", "\u0663\u0660\u0660\u0660"),
        ("DURABLE_AGENTS_MCP_WAIT_SECONDS", "1e300"),
        ("DURABLE_AGENTS_STREAM_HEARTBEAT_SECONDS", "\u0663"),
        ("DURABLE_AGENTS_STREAM_RETENTION_SECONDS", "1e300"),
        ("DURABLE_AGENTS_APPROVAL_TIMEOUT_SECONDS", "0"),
        ("DURABLE_AGENTS_TURN_DEADLINE_SECONDS", "0.5"),
        ("DURABLE_AGENTS_WEBHOOK_ATTEMPTS", "51"),
        ("DURABLE_AGENTS_WEBHOOK_TIMEOUT_SECONDS", "soon"),
    ],
)
def test_an_out_of_range_setting_stops_the_app_from_starting(
    model: ModelServer, monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(HostingConfigurationError) as refused:
        build_app(make_agents(model), mcp_tools=True)
    message = str(refused.value)
    assert name in message and repr(value) in message and " from " in message, message


def test_a_setting_that_is_not_a_number_stops_the_app_too(
    model: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every app setting is read once, when the app is built: one no request could work with
    # (here, a history store nobody has) stops it then, naming the setting, not on first use.
    monkeypatch.setenv("DURABLE_AGENTS_HISTORY_STORE", "tape")
    refusal = "DURABLE_AGENTS_HISTORY_STORE must be 'files' or 'azure'"
    with pytest.raises(HostingConfigurationError, match=refusal):
        build_app(make_agents(model))


def test_settings_in_range_start_the_app(model: ModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    in_range = {
        "DURABLE_AGENTS_SESSION_TTL": "0",
        "DURABLE_AGENTS_SESSION_TTL__assistant": "1.5",
        "DURABLE_AGENTS_MAX_SESSION_BYTES": "5000",
        "DURABLE_AGENTS_ARCHIVE_AT_BYTES": "4096",
        "DURABLE_AGENTS_MCP_WAIT_SECONDS": "0.5",
    }
    for name, value in in_range.items():
        monkeypatch.setenv(name, value)
    assert build_app(make_agents(model), mcp_tools=True) is not None


async def test_a_failure_after_the_signal_still_answers_the_run_ids(
    api: Api, model: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hosting.http._api

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug after the turn was sent")

    monkeypatch.setattr(hosting.http._api, "wait_for_run", broken)
    model.script(Reply.text("done anyway"))
    answer = await api.post("/api/agents/assistant/run", json_body={"message": "hi"})
    # The turn was sent: a retry without its ids would run it again in a new session.
    assert answer.status == 202, answer.body
    body = answer.json()
    session, correlation = body["session_id"], body["correlation_id"]
    assert answer.headers["x-ms-session-id"] == session
    assert answer.headers["x-ms-correlation-id"] == correlation
    assert answer.headers["location"].endswith(f"/sessions/{session}/runs/{correlation}")
    monkeypatch.undo()
    run = await api.get(f"/api/agents/assistant/sessions/{session}/runs/{correlation}", params={"wait": "20"})
    assert run.status == 200 and run.json()["status"] == "succeeded", run.body
