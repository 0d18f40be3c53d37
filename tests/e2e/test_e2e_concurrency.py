"""Concurrency over real HTTP: a burst on one session is serialised; many sessions stay apart."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from e2e_support import Client, history, texts

from agents.testing import ModelRequest, ModelServer, Reply


def answer_to(request: ModelRequest) -> Reply:
    return Reply.text(f"answer to {request.last_user_text}")


def user_and_assistant(request: ModelRequest) -> list[str]:
    return [m.text for m in request.messages if m.role in ("user", "assistant")]


async def test_fifty_concurrent_requests_to_one_session_run_one_after_another(
    client: Client, model: ModelServer
) -> None:
    model.handler = answer_to
    session = "e2e-burst-one-session"
    messages = [f"message {i:02d}" for i in range(50)]
    answers = await asyncio.gather(*(client.run("assistant", m, session) for m in messages))
    assert [a.status for a in answers] == [200] * 50, [a.body[:200] for a in answers if a.status != 200]
    by_message = {m: a.json() for m, a in zip(messages, answers, strict=True)}
    for message, body in by_message.items():
        assert body["response"]["text"] == f"answer to {message}"
    correlation_ids = [b["correlation_id"] for b in by_message.values()]
    assert len(set(correlation_ids)) == 50

    # One model call per turn, and turn k saw exactly turns 1..k-1 (in the order they ran) plus its
    # own message: the turns ran strictly one after another, none saw a half-finished neighbour.
    assert len(model.requests) == 50
    order = [r.last_user_text or "" for r in model.requests]
    assert sorted(order) == messages
    for k, request in enumerate(model.requests):
        expected = [text for earlier in order[:k] for text in (earlier, f"answer to {earlier}")]
        assert user_and_assistant(request) == [*expected, order[k]], f"turn {k}"

    # The stored history: 50 request/response pairs, in the same order, none lost or duplicated.
    stored = await client.session_state("assistant", session)
    entries = history(stored["state"])
    assert len(entries) == 100
    assert [e["$type"] for e in entries] == ["request", "response"] * 50
    assert [texts(e)[0] for e in entries[::2]] == order
    assert [texts(e)[0] for e in entries[1::2]] == [f"answer to {m}" for m in order]
    requests, responses = entries[::2], entries[1::2]
    pairs = [(q["correlationId"], r["correlationId"]) for q, r in zip(requests, responses, strict=True)]
    assert all(q == r for q, r in pairs)
    assert Counter(q for q, _ in pairs) == Counter(correlation_ids)
    assert set(stored["state"]["data"]["runs"]) == set(correlation_ids)


@pytest.mark.slow  # 400 turns: 3-6 s on 2 cores
async def test_two_hundred_sessions_in_parallel(client: Client, model: ModelServer) -> None:
    model.handler = answer_to
    sessions = [f"e2e-parallel-{i:03d}" for i in range(200)]
    gate = asyncio.Semaphore(40)  # a bounded client: at most 40 requests in flight

    async def two_turns(session: str) -> list[int]:
        statuses = []
        for turn in ("one", "two"):
            async with gate:
                answer = await client.run("assistant", f"{session} turn {turn}", session)
            statuses.append(answer.status)
            assert answer.json()["response"]["text"] == f"answer to {session} turn {turn}", answer.body
        return statuses

    results = await asyncio.gather(*(two_turns(s) for s in sessions))
    assert results == [[200, 200]] * 200
    assert len(model.requests) == 400
    # Every second turn saw its own session's first turn and nothing of any other session.
    for request in model.requests:
        session, _, turn = (request.last_user_text or "").rpartition(" turn ")
        earlier = [f"{session} turn one", f"answer to {session} turn one"] if turn == "two" else []
        assert user_and_assistant(request) == [*earlier, request.last_user_text]

    async def check(session: str) -> None:
        async with gate:
            stored = await client.session_state("assistant", session)
        assert [texts(e)[0] for e in history(stored["state"])] == [
            f"{session} turn one",
            f"answer to {session} turn one",
            f"{session} turn two",
            f"answer to {session} turn two",
        ]

    await asyncio.gather(*(check(s) for s in sessions))
