"""Whole-number query values are ASCII digits, read one way: other scripts' digits ('²', '①',
'٣') are a 400 naming the field, never a 500 and never a number."""

from __future__ import annotations

import pytest
from hosting_support import Api

from agents.testing import ModelServer, Reply

RUN = "/api/agents/assistant/run"
SESSION = "/api/agents/assistant/sessions/digits"
# Superscripts and circled digits pass str.isdigit but not int(); Arabic-Indic and fullwidth
# digits pass both.
NOT_ASCII = ["\u00b2", "\u2460", "\u2075", "\u0663", "\uff13", "1\u0663"]


@pytest.fixture
async def run_id(api: Api, model: ModelServer) -> str:
    model.script(Reply.text("hi"))
    answer = await api.post(RUN, json_body={"message": "hello", "session_id": "digits"})
    assert answer.status == 200, answer.body
    return str(answer.json()["correlation_id"])


@pytest.mark.parametrize("value", NOT_ASCII)
async def test_unicode_digits_are_400_on_every_integer_query_value(
    api: Api, run_id: str, value: str
) -> None:
    for path, field in (
        ("/api/agents/assistant/sessions", "page_size"),
        (f"{SESSION}/history", "limit"),
        (f"{SESSION}/runs/{run_id}/stream", "after"),
        (f"{SESSION}/runs/{run_id}", "wait"),
    ):
        answer = await api.get(path, params={field: value})
        assert answer.status == 400, (field, value, answer.status, answer.body)
        assert answer.mimetype == "application/problem+json"
        assert answer.json()["field"] == field, answer.body


async def test_ascii_values_still_read(api: Api, run_id: str) -> None:
    assert (await api.get("/api/agents/assistant/sessions", params={"page_size": "3"})).status == 200
    assert (await api.get(f"{SESSION}/history", params={"limit": "0001"})).status == 200
    assert (await api.get(f"{SESSION}/runs/{run_id}", params={"wait": "0.5"})).status == 200


async def test_a_page_size_reads_alike_on_every_listing(api: Api, run_id: str) -> None:
    # Leading zeros count towards one length cap, the same on every listing.
    for path, field, most in (
        ("/api/agents/assistant/sessions", "page_size", 100),
        (f"{SESSION}/history", "limit", 1000),
        ("/api/users/digits-user/memories", "limit", 100),
    ):
        cases = (("0001", 200), ("000100", 200), ("0000001", 400), ("0", 400), (str(most + 1), 400))
        for value, status in cases:
            answer = await api.get(path, params={field: value})
            assert answer.status == status, (path, value, answer.body)
            if status == 400:
                problem = answer.json()
                assert (problem["code"], problem["field"]) == ("invalid_field", field), problem
