"""Memory by similarity through the real host: with an embedding model configured
(`OPENAI_EMBEDDING_MODEL_ID`, the scripted server's deterministic `/embeddings`) and two worker
processes, the concierge remembers u1's fact with its embedding and the session it was told in,
and u1's new session finds it by a paraphrase that shares no word with it; the turn's lookup costs
one embedding call a turn, whichever worker runs each step."""

from __future__ import annotations

import json
import pathlib
import uuid
from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest
from e2e_support import Client, HostProcess

from agents.testing import ModelServer, Reply

FACT = "The traveller is allergic to peanuts."
PARAPHRASE = "Which nuts give me an allergy?"  # not one word in common with FACT


@pytest.fixture(scope="module")
def embedding_host(
    model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostProcess]:
    root = tmp_path_factory.mktemp("embedding-host")
    env = {"OPENAI_EMBEDDING_MODEL_ID": "e2e-embedding", "FUNCTIONS_WORKER_PROCESS_COUNT": "2"}
    host = HostProcess(root / "data", model_server.base_url, root / "host.log", extra_env=env).start()
    try:
        yield host
    finally:
        host.stop()


@pytest.fixture
async def client(embedding_host: HostProcess) -> AsyncIterator[Client]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        yield Client(session, embedding_host.url)


async def test_a_users_fact_is_found_in_a_new_session_by_a_paraphrase(
    client: Client, model: ModelServer, embedding_host: HostProcess
) -> None:
    u1 = f"u1-{uuid.uuid4().hex[:8]}"
    model.script(Reply.tool_call("remember", {"fact": FACT}), Reply.text("Noted."))
    first = await client.run("concierge", "I react badly to peanuts.", user_id=u1)
    assert first.status == 200, first.body
    session_a = first.json()["session_id"]
    # Three steps (model, tool, model): the request embedded once, the fact once.
    assert [r.inputs for r in model.embedding_requests] == [("I react badly to peanuts.",), (FACT,)]

    model.script(Reply.tool_call("recall", {"query": "nut allergies"}), Reply.text("Avoid peanuts."))
    second = await client.run("concierge", PARAPHRASE, user_id=u1)
    assert second.status == 200, second.body
    assert second.json()["session_id"] != session_a
    assert [r.inputs for r in model.embedding_requests[2:]] == [(PARAPHRASE,), ("nut allergies",)]
    assert all(r.model == "e2e-embedding" for r in model.embedding_requests)
    recalled = json.loads(next(m.text for m in model.requests[3].messages if m.role == "tool"))
    assert recalled[0]["text"] == FACT
    # The item records the session it was told in; the listing never shows its vector.
    listing = (await client.get(f"/api/users/{u1}/memories")).json()
    [item] = listing["items"]
    assert item["source_session"] == session_a and "embedding" not in item
    log = pathlib.Path(embedding_host.log_path).read_text(errors="replace")
    assert "no embedding from" not in log
