"""Text that cannot be encoded as UTF-8 (lone UTF-16 surrogates) never breaks a session."""

from __future__ import annotations

from typing import Any

from hosting_support import Api, stored_state

from agents.testing import ModelServer, Reply
from state import load_state

RUN = "/api/agents/assistant/run"


async def test_a_lone_surrogate_in_the_model_reply_is_replaced_and_the_session_lives_on(
    api: Api, host: Any, model: ModelServer
) -> None:
    model.script(Reply.text("broken \ud800 text"), Reply.text("still here"))
    first = await api.post(RUN, json_body={"message": "hi", "session_id": "sur"})
    assert first.status == 200, first.body
    assert first.json()["response"]["text"] == "broken \ufffd text"
    session = await api.get("/api/agents/assistant/sessions/sur")
    assert session.status == 200, session.body
    second = await api.post(RUN, json_body={"message": "again", "session_id": "sur"})
    assert second.status == 200, second.body
    assert second.json()["response"]["text"] == "still here"
    # What the model is sent next holds the replacement, not the surrogate.
    assert "broken \ufffd text" in str(model.requests[-1].body)
    state = load_state(await stored_state(host, "assistant", "sur"))
    assert len(state) == 4


async def test_a_lone_surrogate_from_a_caller_is_a_400_naming_the_field(api: Api, host: Any) -> None:
    body = '{"message": "hi \\ud800", "session_id": "sur2"}'
    response = await api.post(RUN, body=body, headers={"Content-Type": "application/json"})
    assert response.status == 400, response.body
    problem = response.json()
    assert (problem["code"], problem["field"]) == ("invalid_encoding", "message")
    fmt = '{"message": "hi", "response_format": {"type": "object", "title": "\\udc00"}}'
    response = await api.post(RUN, body=fmt, headers={"Content-Type": "application/json"})
    assert response.status == 400, response.body
    assert response.json()["field"] == "response_format"
