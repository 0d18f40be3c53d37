"""`GET /api/agents/{agent}/sessions`: an agent's sessions a page at a time, from the durable
entity query the local host answers as the extension does (top + x-ms-continuation-token)."""

from __future__ import annotations

import base64

from hosting_support import Api

from agents.testing import ModelServer, Reply
from state import CURRENT_SCHEMA_VERSION


async def _start(api: Api, model: ModelServer, session: str, text: str) -> None:
    model.script(Reply.text(f"answer to {text}"))
    answer = await api.post("/api/agents/assistant/run", json_body={"message": text, "session_id": session})
    assert answer.status == 200, answer.body


async def test_pages_cover_every_session_exactly_once(api: Api, model: ModelServer) -> None:
    for i in range(5):
        await _start(api, model, f"list-{i}", f"hello number {i}")
    await _start(api, model, "list-odd-one", "x")
    seen: list[str] = []
    continuation = None
    pages = 0
    while True:
        params = {"page_size": "2"} | ({"continuation": continuation} if continuation else {})
        page = await api.get("/api/agents/assistant/sessions", params=params)
        assert page.status == 200, page.body
        body = page.json()
        assert body["agent"] == "assistant" and len(body["sessions"]) <= 2
        seen += [s["session_id"] for s in body["sessions"]]
        pages += 1
        continuation = body["continuation"]
        if continuation is None:
            assert body["next"] is None
            break
        assert body["next"].startswith("http://localhost:7071/api/agents/assistant/sessions?page_size=2&")
    assert sorted(seen) == sorted([f"list-{i}" for i in range(5)] + ["list-odd-one"])
    assert pages == 3
    writer = (await api.get("/api/agents/writer/sessions")).json()
    assert writer["sessions"] == [] and writer["continuation"] is None


async def test_a_row_summarises_the_session(api: Api, model: ModelServer) -> None:
    await _start(api, model, "summary-1", "  What   is the\nweather like? " + "x" * 200)
    body = (await api.get("/api/agents/assistant/sessions")).json()
    [row] = [s for s in body["sessions"] if s["session_id"] == "summary-1"]
    session = (await api.get("/api/agents/assistant/sessions/summary-1")).json()
    assert row["turns"] == 1 and row["readable"] is True
    assert row["schema_version"] == session["schema_version"] == CURRENT_SCHEMA_VERSION
    assert row["first_message"].startswith("What is the weather like? xxx")
    assert len(row["first_message"]) == 118
    assert row["last_operation_time"]
    # The list and the session count the stored state's size the same way.
    assert row["size_bytes"] == session["size_bytes"], (row["size_bytes"], session["size_bytes"])


async def test_bad_paging_parameters_are_problems(api: Api) -> None:
    for params, field in (
        ({"page_size": "0"}, "page_size"),
        ({"page_size": "101"}, "page_size"),
        ({"page_size": "two"}, "page_size"),
        ({"continuation": "%%%"}, "continuation"),
        ({"continuation": base64.urlsafe_b64encode(b"\r\nx-evil: 1").decode()}, "continuation"),
        ({"continuation": "A" * 5000}, "continuation"),
        # Well-formed, but not a token the backend handed out: the backend refuses it.
        ({"continuation": base64.urlsafe_b64encode(b"not-a-token").decode().rstrip("=")}, "continuation"),
    ):
        answer = await api.get("/api/agents/assistant/sessions", params=params)
        assert answer.status == 400, (params, answer.body)
        problem = answer.json()
        assert answer.mimetype == "application/problem+json"
        assert (problem["code"], problem["field"]) == ("invalid_field", field), problem
    unknown = await api.get("/api/agents/nobody/sessions")
    assert unknown.status == 404 and unknown.json()["code"] == "unknown_agent"


async def test_the_storage_being_down_is_a_503(offline_api: Api) -> None:
    answer = await offline_api.get("/api/agents/assistant/sessions")
    assert answer.status == 503 and answer.json()["code"] == "storage_unavailable"
