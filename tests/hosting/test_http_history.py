"""`GET .../sessions/{id}/history`: pages newest first, entries exactly as stored, hostile
`before`/`limit` answered 400, counts and expiry on the session resource."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hosting_support import Api

from agents.testing import ModelServer, Reply

RUN = "/api/agents/assistant/run"
HISTORY = "/api/agents/assistant/sessions/paged/history"


async def seed(api: Api, model: ModelServer, turns: int) -> None:
    for i in range(turns):
        model.script(Reply.text(f"answer {i}"))
        answer = await api.post(RUN, json_body={"message": f"question {i}", "session_id": "paged"})
        assert answer.status == 200


async def test_pages_walk_the_whole_history_newest_first(api: Api, host: Any, model: ModelServer) -> None:
    await seed(api, model, 5)
    stored = json.loads(await host._store.run(host._store.load_state, "@dafx-assistant@paged"))
    entries: list[Any] = []
    cursor = None
    pages = 0
    while True:
        params = {"limit": "3", **({"before": cursor} if cursor else {})}
        page = (await api.get(HISTORY, params=params)).json()
        assert page["total"] == 10 and len(page["entries"]) <= 3
        entries.extend(page["entries"])
        cursor = page["next"]
        pages += 1
        if cursor is None:
            break
    assert pages == 4
    assert entries[::-1] == stored["data"]["conversationHistory"]  # exactly as stored
    body = (await api.get("/api/agents/assistant/sessions/paged")).json()
    assert body["entries"] == 10 and body["archived_entries"] == 0
    assert body["history_url"].endswith("/api/agents/assistant/sessions/paged/history")
    assert body["expires_at"] is not None  # 30 days after the last turn by default
    # A cursor past the end is the end; 0 is an empty last page.
    assert len((await api.get(HISTORY, params={"before": "999999"})).json()["entries"]) == 10
    assert (await api.get(HISTORY, params={"before": "0"})).json() == {
        "agent": "assistant", "session_id": "paged", "total": 10, "entries": [], "next": None,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("limit", "0"),
        ("limit", "1001"),
        ("limit", "-1"),
        ("limit", "1e3"),
        ("limit", "\uff11"),  # a fullwidth digit
        ("limit", ""),
        ("before", "abc"),
        ("before", "-1"),
        ("before", "01"),
        ("before", "1.x"),
        ("before", "1.00000000-" + "0" * 63),
        ("before", "9" * 200),
        ("before", "1\x00"),
        ("before", "1./../../x"),
    ],
)
async def test_hostile_paging_parameters_are_400(
    api: Api, host: Any, model: ModelServer, field: str, value: str
) -> None:
    await seed(api, model, 1)
    before = await host._store.run(host._store.load_state, "@dafx-assistant@paged")
    answer = await api.get(HISTORY, params={field: value})
    assert answer.status == 400, answer.body[:200]
    problem = answer.json()
    assert problem["code"] == "invalid_field" and problem["field"] == field
    assert await host._store.run(host._store.load_state, "@dafx-assistant@paged") == before


async def test_a_forged_chunk_hint_reads_nothing_outside_the_session(
    api: Api, host: Any, model: ModelServer
) -> None:
    await seed(api, model, 2)
    # Well-formed, names no chunk: the hint is only a hint (the session has no archive anyway).
    answer = await api.get(HISTORY, params={"before": "3.00000001-" + "a" * 64})
    assert answer.status == 200 and len(answer.json()["entries"]) == 3


async def test_history_of_an_unknown_session_is_404(api: Api, host: Any) -> None:
    answer = await api.get("/api/agents/assistant/sessions/nobody/history")
    assert answer.status == 404 and answer.json()["code"] == "session_not_found"
    answer = await api.get("/api/agents/nobody/sessions/x/history")
    assert answer.status == 404 and answer.json()["code"] == "unknown_agent"
