"""Long-term memory with embeddings, through real turns against the model server over HTTP (its
`/embeddings` answers deterministic vectors): a paraphrase is found where keywords miss, the
turn's lookup costs one embedding call per turn whatever its steps, facts stored before
embeddings were configured are still found by their words, no embedding model means keywords as
before, and a bad embedding answer or an unreachable embedding model never fails the turn."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable

import pytest

from agents import (
    Agent,
    InputMessage,
    ModelConnection,
    ModelSettings,
    OpenAIEmbedder,
    RetryPolicy,
    TurnProgress,
    TurnRequest,
    TurnResult,
    embedder_from_env,
)
from agents._settings import Endpoint
from agents.memory import MemoryNamespace, MemoryStore, UserMemoryProvider
from agents.testing import ModelRequest, ModelServer, Reply, hashed_embedding
from state import AgentState

MakeStore = Callable[..., MemoryStore]
U1 = MemoryNamespace("u1")
FACT = "The user is allergic to peanuts"
PARAPHRASE = "Which nuts give me an allergy?"  # not one word in common with FACT


@pytest.fixture
def store(make_memory_store: MakeStore) -> MemoryStore:
    return make_memory_store()


@pytest.fixture
def embeddings(model: ModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """An embedding model configured the way Microsoft Agent Framework names it."""
    monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
    monkeypatch.setenv("OPENAI_EMBEDDING_MODEL_ID", "test-embedding")


def _agent(settings: ModelSettings, store: MemoryStore, *, max_facts: int = 20) -> Agent:
    provider = UserMemoryProvider(store=store, max_facts=max_facts)
    return Agent(name="concierge", instructions="Be helpful.", model=settings, context_providers=[provider])


def _session() -> AgentState:
    state = AgentState.new()
    state.user_id = "u1"
    return state


def _request(text: str, cid: str) -> TurnRequest:
    return TurnRequest(correlation_id=cid, messages=[InputMessage("user", text)])


async def _turn(agent: Agent, state: AgentState, text: str, cid: str, session: str = "s1") -> str:
    result = await agent.run(state, _request(text, cid), session_id=session)
    assert result.status == "succeeded", result.error
    return result.text


async def _stepwise(agent: Agent, state: AgentState, text: str, cid: str) -> TurnResult:
    """The turn as a durable host runs it: one step at a time, each from the recorded progress."""
    progress: TurnProgress | None = None
    for _ in range(10):
        outcome = await agent.run_step(state, _request(text, cid), progress, session_id="s1")
        if isinstance(outcome, TurnResult):
            return outcome
        assert isinstance(outcome, TurnProgress), "no tool here needs approval"
        progress = TurnProgress.from_json(json.loads(json.dumps(outcome.to_json())))  # as stored
    raise AssertionError("the turn did not end")


def _system(request: ModelRequest) -> str:
    return "\n".join(m.text for m in request.messages if m.role in ("system", "developer"))


def _tool_results(request: ModelRequest) -> list[str]:
    return [m.text for m in request.messages if m.role == "tool"]


@pytest.mark.usefixtures("embeddings")
async def test_a_paraphrase_is_found_where_keywords_miss(
    model: ModelServer, settings: ModelSettings, store: MemoryStore
) -> None:
    agent = _agent(settings, store, max_facts=1)
    model.script(Reply.tool_call("remember", {"fact": FACT}), Reply.text("Noted."))
    await _turn(agent, _session(), "Remember my peanut allergy.", "a1", session="s-first")
    [item] = [h.item for h in await store.search(U1, "peanuts")]
    assert item.embedding is not None and len(item.embedding) == 256
    assert item.source_session == "s-first"
    # A newer unrelated fact: a lookup by words (nothing shared) would fall back to it, the newest.
    await store.put(U1, "Lives in Lisbon", embedding=hashed_embedding("Lives in Lisbon"))

    model.script(Reply.tool_call("recall", {"query": "nut allergies"}), Reply.text("Avoid peanuts."))
    await _turn(agent, _session(), PARAPHRASE, "b1", session="s-second")
    assert FACT in _system(model.requests[2]) and "Lisbon" not in _system(model.requests[2])
    recalled = json.loads(_tool_results(model.requests[3])[0])
    assert recalled[0]["text"] == FACT


async def test_without_an_embedding_model_search_is_by_keywords(
    model: ModelServer, settings: ModelSettings, store: MemoryStore
) -> None:
    agent = _agent(settings, store, max_facts=1)
    model.script(Reply.tool_call("remember", {"fact": FACT}), Reply.text("Noted."))
    await _turn(agent, _session(), "Remember my peanut allergy.", "a1")
    await store.put(U1, "Lives in Lisbon")
    model.script(Reply.tool_call("recall", {"query": "nut allergies"}), Reply.text("?"))
    await _turn(agent, _session(), PARAPHRASE, "b1")
    assert "Lisbon" in _system(model.requests[2]) and FACT not in _system(model.requests[2])
    assert json.loads(_tool_results(model.requests[3])[0]) == []
    assert model.embedding_requests == []
    [hit] = await store.search(U1, "peanuts")
    assert hit.item.embedding is None and hit.item.source_session == "s1"


@pytest.mark.usefixtures("embeddings")
async def test_one_embedding_call_per_turn_for_the_lookup(
    model: ModelServer, settings: ModelSettings, store: MemoryStore
) -> None:
    agent = _agent(settings, store)
    state = _session()
    # Three steps (model, tool, model): the lookup runs before each, the request is embedded once.
    model.script(Reply.tool_call("forget", {"fact_id": "nothing"}), Reply.text("Done."))
    result = await _stepwise(agent, state, "Forget nothing at all.", "t1")
    assert result.status == "succeeded", result.error
    assert [r.inputs for r in model.embedding_requests] == [("Forget nothing at all.",)]
    # One more per remembered fact; the turn's vector is not left in the session's state.
    model.script(Reply.tool_call("remember", {"fact": FACT}), Reply.text("Noted."))
    result = await _stepwise(agent, state, "I cannot eat peanuts.", "t2")
    assert result.status == "succeeded", result.error
    assert [r.inputs for r in model.embedding_requests[1:]] == [("I cannot eat peanuts.",), (FACT,)]
    assert "memory" not in state.state_bag


@pytest.mark.usefixtures("embeddings")
async def test_facts_stored_before_embeddings_are_still_found_by_their_words(
    model: ModelServer, settings: ModelSettings, store: MemoryStore
) -> None:
    old = await store.put(U1, "Likes jazz on Sunday mornings")  # no vector: stored before
    await store.put(U1, FACT, embedding=hashed_embedding(FACT))
    agent = _agent(settings, store)
    model.script(Reply.tool_call("recall", {"query": "jazz"}), Reply.text("Jazz it is."))
    await _turn(agent, _session(), "Play some jazz", "j1")
    recalled = [f["id"] for f in json.loads(_tool_results(model.requests[1])[0])]
    assert recalled[0] == old.id  # its words match the query fully: ahead of a dissimilar vector
    assert "Likes jazz" in _system(model.requests[0])
    hits = await store.search(U1, "jazz", embedding=hashed_embedding("jazz"))
    assert old.id in [h.item.id for h in hits]


@pytest.mark.usefixtures("embeddings")
@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (lambda text, dims: ["0.1", "x"], "other than numbers"),
        (lambda text, dims: {"vector": [1.0]}, "list of 1 to"),
        (lambda text, dims: [0.5, 0.5, 0.5], "3 dimensions where 256 were expected"),
    ],
)
async def test_a_bad_embedding_answer_never_fails_the_turn(
    model: ModelServer,
    settings: ModelSettings,
    store: MemoryStore,
    caplog: pytest.LogCaptureFixture,
    bad: Callable[[str, int], object],
    why: str,
) -> None:
    agent = _agent(settings, store)
    model.script(Reply.tool_call("remember", {"fact": "Prefers aisle seats"}), Reply.text("Noted."))
    await _turn(agent, _session(), "I like aisle seats", "g1")  # a good answer first: 256 dimensions
    model.embedding_handler = bad
    model.script(
        Reply.tool_call("remember", {"fact": FACT}),
        Reply.tool_call("recall", {"query": "aisle"}),
        Reply.text("Noted."),
    )
    with caplog.at_level(logging.WARNING, logger="agents.memory"):
        assert await _turn(agent, _session(), "Note that peanuts are a problem", "b1") == "Noted."
    assert why in caplog.text and "searching by words" in caplog.text
    assert "Prefers aisle seats" in _system(model.requests[2])  # the lookup went on by words
    assert "Remembered as" in _tool_results(model.requests[3])[0]
    assert [f["text"] for f in json.loads(_tool_results(model.requests[4])[1])] == ["Prefers aisle seats"]
    [hit] = await store.search(U1, "peanuts")
    assert hit.item.embedding is None  # stored all the same, found by its words


async def test_azure_deployment_names_the_embedding_model(
    model: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", model.url)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "k")
    assert embedder_from_env() is None  # no deployment named: no embeddings
    monkeypatch.setenv("AZURE_OPENAI_EMBEDDING_DEPLOYMENT_NAME", "embed-dep")
    embedder = embedder_from_env()
    assert embedder is not None and embedder.model == "embed-dep"
    [vector] = await embedder.embed(["hello there"])
    assert vector == pytest.approx(hashed_embedding("hello there"))
    assert model.embedding_requests[0].path == "/openai/deployments/embed-dep/embeddings"


async def test_an_unreachable_embedding_model_never_fails_the_turn(
    model: ModelServer, settings: ModelSettings, store: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    retry = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, deadline=5.0)
    embedder = OpenAIEmbedder(
        Endpoint("openai", "gone", f"http://127.0.0.1:{port}/v1"), ModelConnection(timeout=2.0, retry=retry)
    )
    provider = UserMemoryProvider(store=store, embedder=embedder)
    agent = Agent(name="concierge", instructions="Be helpful.", model=settings, context_providers=[provider])
    model.script(Reply.tool_call("remember", {"fact": FACT}), Reply.text("Noted."))
    with caplog.at_level(logging.WARNING, logger="agents.memory"):
        assert await _turn(agent, _session(), "Peanuts are a problem", "u1") == "Noted."
    assert "no embedding from gone" in caplog.text and "cannot reach the model service" in caplog.text
    [hit] = await store.search(U1, "peanuts")
    assert hit.item.embedding is None
