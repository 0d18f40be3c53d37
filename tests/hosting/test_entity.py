"""The agent entity driven through the Durable JSON batch protocol against the local model server."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from typing import Any

import azure.durable_functions as df
import pytest
from hosting_support import functions, run_batch, run_op

from agents.testing import ModelServer, Reply
from hosting import OPERATIONS, entity_name
from hosting._loop import run_sync
from state import AgentState, dump_state, load_state

ENTITY = "dafx-assistant"


def test_every_agent_has_an_entity_named_after_it(app: df.DFApp) -> None:
    names = functions(app)
    for agent in ("assistant", "writer", "reviewer"):
        assert entity_name(agent) == f"dafx-{agent}"
        binding = json.loads(str(names[f"dafx-{agent}"]))["bindings"][0]
        assert binding == {
            "direction": "IN",
            "type": "entityTrigger",
            "name": "context",
            "entityName": f"dafx-{agent}",
        }
    assert OPERATIONS == (
        "run", "step", "cancel", "decide", "expire_approvals", "announce_approvals", "run_status",
        "reset", "delete", "get", "expire", "archive_epoch",
    )


def test_first_turn_creates_the_session_state(app: df.DFApp, model: ModelServer) -> None:
    model.script(Reply.text("hello there"))
    out = run_batch(app, ENTITY, "s1", None, [("run", run_op("hi", "c1"))])
    assert out.exists is True
    [result] = out.results
    assert result.is_error is False
    assert result.value["status"] == "succeeded"
    assert result.value["correlationId"] == "c1"
    assert result.value["text"] == "hello there"
    assert out.state is not None
    state = load_state(out.state)
    assert [e.type for e in state.entries] == ["request", "response"]
    c1 = state.find_run("c1")
    assert c1 is not None
    assert c1.status == "succeeded"
    # Stored as the state document itself, not a JSON string wrapping it.
    assert json.loads(out.state)["schemaVersion"] == "1.8.0"


def test_several_operations_in_one_batch_see_each_others_state(app: df.DFApp, model: ModelServer) -> None:
    model.script(Reply.text("one"), Reply.text("two"))
    out = run_batch(
        app,
        ENTITY,
        "s2",
        None,
        [("run", run_op("first", "a")), ("run", run_op("second", "b")), ("get", None)],
    )
    assert [r.is_error for r in out.results] == [False, False, False]
    assert [r.value["text"] for r in out.results[:2]] == ["one", "two"]
    got = out.results[2].value
    assert out.state is not None
    assert got == json.loads(out.state)
    assert len(got["data"]["conversationHistory"]) == 4
    # The second turn was sent the first turn's history.
    assert [m.text for m in model.requests[1].messages if m.role not in ("system", "developer")][:3] == [
        "first",
        "one",
        "second",
    ]


def test_redelivered_run_returns_the_stored_answer_without_a_second_turn(
    app: df.DFApp, model: ModelServer
) -> None:
    model.script(Reply.text("only once"))
    first = run_batch(app, ENTITY, "s3", None, [("run", run_op("hi", "dup")), ("run", run_op("hi", "dup"))])
    assert first.results[0].value["text"] == "only once"
    assert first.results[1].value == first.results[0].value
    again = run_batch(app, ENTITY, "s3", first.state, [("run", run_op("hi", "dup"))])
    assert again.results[0].value == first.results[0].value
    assert len(model.requests) == 1
    assert again.state is not None
    assert len(load_state(again.state).entries) == 2


def test_same_correlation_id_with_another_message_is_a_conflict_and_changes_nothing(
    app: df.DFApp, model: ModelServer
) -> None:
    model.script(Reply.text("answer"))
    first = run_batch(app, ENTITY, "s4", None, [("run", run_op("question", "same"))])
    out = run_batch(app, ENTITY, "s4", first.state, [("run", run_op("another question", "same"))])
    [result] = out.results
    assert result.is_error is True
    assert "already used for a different request" in result.value
    assert out.state == first.state
    assert len(model.requests) == 1


def test_failed_model_call_is_recorded_in_history_and_reported_as_failed(
    app: df.DFApp, model: ModelServer
) -> None:
    model.script(Reply.error(500, "the model broke", code="server_error"))
    out = run_batch(app, ENTITY, "s5", None, [("run", run_op("hi", "bad"))])
    [result] = out.results
    assert result.is_error is False  # a model failure is a result, not an entity crash
    assert result.value["status"] == "failed"
    assert result.value["error"]["status"] == 500
    assert result.value["error"]["code"] == "server_error"
    assert "the model broke" in result.value["error"]["message"]
    assert out.state is not None
    state = load_state(out.state)
    run = state.find_run("bad")
    assert run is not None
    assert run.status == "failed"
    assert run.response.failure is not None
    assert list(state.replay_messages()) == []


@pytest.mark.parametrize(
    "stored",
    [
        '{"schemaVersion": "2.0.0", "data": {"conversationHistory": []}}',
        '{"schemaVersion": "1.0.0", "data": {"conversationHistory": [{"$type": "nope"}]}}',
        '{"schemaVersion": "1.0.0", "data": {"conversationHistory": {}}}',
        '{"schemaVersion": "1.0.0", "data": {"conversationHist',
        '["not", "a", "state"]',
        '"just a string"',
    ],
)
@pytest.mark.parametrize("operation", ["run", "reset"])
def test_unreadable_state_fails_the_operation_and_stays_byte_identical(
    app: df.DFApp, model: ModelServer, stored: str, operation: str
) -> None:
    value = run_op("hi") if operation == "run" else None
    out = run_batch(app, ENTITY, "broken", stored, [(operation, value), ("run", run_op("again"))])
    assert [r.is_error for r in out.results] == [True, True]
    assert any(
        word in out.results[0].value.lower() for word in ("version", "state", "json", "expected", "root")
    )
    assert out.state == stored
    assert out.exists is True
    assert model.requests == []


def test_an_error_after_a_good_turn_keeps_the_good_turn(app: df.DFApp, model: ModelServer) -> None:
    model.script(Reply.text("fine"))
    out = run_batch(app, ENTITY, "s6", None, [("run", run_op("hi", "ok")), ("explode", None)])
    assert [r.is_error for r in out.results] == [False, True]
    assert "no operation 'explode'" in out.results[1].value
    assert out.state is not None
    assert load_state(out.state).find_run("ok") is not None


@pytest.mark.parametrize(
    "bad_input",
    [
        {"messages": [{"role": "user", "text": "hi"}]},  # no correlation id
        {"correlationId": "x", "messages": []},
        {"correlationId": "x", "messages": [{"role": "robot", "text": "hi"}]},
        "not an object",
    ],
)
def test_invalid_run_input_fails_without_touching_state(
    app: df.DFApp, model: ModelServer, bad_input: Any
) -> None:
    state = dump_state(AgentState.new())
    out = run_batch(app, ENTITY, "s7", state, [("run", bad_input)])
    assert out.results[0].is_error is True
    assert out.state == state
    assert model.requests == []


def test_reset_empties_history_and_state_bag(app: df.DFApp, model: ModelServer) -> None:
    model.script(Reply.text("x"))
    first = run_batch(app, ENTITY, "s8", None, [("run", run_op("hi"))])
    assert first.state is not None
    doc = json.loads(first.state)
    doc["data"]["stateBag"] = {"memory": {"facts": ["likes tea"]}}
    out = run_batch(app, ENTITY, "s8", json.dumps(doc), [("reset", None), ("get", None)])
    assert [r.is_error for r in out.results] == [False, False]
    assert out.state is not None
    state = load_state(out.state)
    assert state.entries == () and state.state_bag == {}


def test_delete_leaves_only_a_tombstone_and_a_second_delete_removes_the_entity(
    app: df.DFApp, model: ModelServer
) -> None:
    model.script(Reply.text("secret answer"))
    first = run_batch(app, ENTITY, "s9", None, [("run", run_op("secret question", "r1"))])
    out = run_batch(app, ENTITY, "s9", first.state, [("delete", None)])
    assert out.results[0].is_error is False
    assert out.exists is True and out.state is not None
    assert "secret" not in out.state  # run ids and times only, no content
    data = json.loads(out.state)["data"]
    assert data["conversationHistory"] == [] and data["discardedRuns"] == ["r1"] and "deletedAt" in data
    again = run_batch(app, ENTITY, "s9", out.state, [("delete", None)])
    assert again.exists is False
    assert again.state in (None, "null")
    nothing = run_batch(app, ENTITY, "s9b", None, [("delete", None)])
    assert nothing.exists is False  # nothing to remember: no tombstone


def test_delete_then_run_in_one_batch_starts_afresh(app: df.DFApp, model: ModelServer) -> None:
    model.script(Reply.text("x"), Reply.text("y"))
    first = run_batch(app, ENTITY, "s10", None, [("run", run_op("hi", "old"))])
    out = run_batch(app, ENTITY, "s10", first.state, [("delete", None), ("run", run_op("new", "new"))])
    assert out.state is not None
    state = load_state(out.state)
    assert out.exists is True
    assert state.find_run("old") is None and state.find_run("new") is not None


def test_orchestration_id_and_response_format_reach_the_request_entry(
    app: df.DFApp, model: ModelServer
) -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": False,
    }
    model.script(Reply.json({"n": 3}))
    out = run_batch(
        app,
        ENTITY,
        "s11",
        None,
        [("run", run_op("count", "o1", orchestrationId="orch-1", responseFormat=schema))],
    )
    result = out.results[0].value
    assert result["status"] == "succeeded" and result["structured"] == {"n": 3}
    assert out.state is not None
    record = load_state(out.state).find_run("o1")
    assert record is not None and record.request is not None
    request = record.request
    assert request.orchestration_id == "orch-1"
    assert model.requests[0].response_format is not None


def test_entities_run_concurrently_on_worker_threads_each_with_its_own_loop(
    app: df.DFApp, model: ModelServer
) -> None:
    model.handler = lambda request: Reply.delay(0.05, then=Reply.text("done"))
    outputs: dict[str, object] = {}
    errors: list[BaseException] = []

    def worker(key: str) -> None:
        try:
            state = None
            for _ in range(2):
                out = run_batch(app, ENTITY, key, state, [("run", run_op(f"hi {key}"))])
                state = out.state
            assert state is not None
            outputs[key] = load_state(state)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(f"t{i}",)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    # Every worker finished (a thread still running after join would leave `all` vacuously true).
    assert sorted(outputs) == sorted(f"t{i}" for i in range(6))
    assert all(len(state.entries) == 4 for state in outputs.values())  # type: ignore[attr-defined]


async def test_entity_called_from_a_thread_running_a_loop_still_works(
    app: df.DFApp, model: ModelServer
) -> None:
    # A host that calls the synchronous entity function straight from async code.
    model.script(Reply.text("from a loop"))
    out = run_batch(app, ENTITY, "s12", None, [("run", run_op("hi"))])
    assert out.results[0].value["text"] == "from a loop"


def test_run_sync_runs_every_turn_on_one_loop() -> None:
    # One loop for the process, whichever worker thread waits: model clients are built once.
    async def current() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    first = run_sync(current)
    assert run_sync(current) is first

    seen: list[asyncio.AbstractEventLoop] = []
    thread = threading.Thread(target=lambda: seen.append(run_sync(current)))
    thread.start()
    thread.join()
    assert seen[0] is first

    async def inside_the_loop() -> None:
        run_sync(current)

    with pytest.raises(RuntimeError, match="turn loop"):
        run_sync(inside_the_loop)

    # Sync tools of concurrent turns do not queue behind each other on a handful of threads: 40
    # of them are all running at once (each waits for the other 39; on a pool of a few threads
    # the barrier breaks). No wall-clock bound: the old one (< 2 s against 2.1 s for a pool of
    # 6 threads) left a loaded machine 0.1 s of slack.
    together = threading.Barrier(40, timeout=30)

    async def sync_work_at_once() -> list[int]:
        return await asyncio.gather(*(asyncio.to_thread(together.wait) for _ in range(40)))

    assert sorted(run_sync(sync_work_at_once)) == list(range(40))


def test_unique_keys(app: df.DFApp, model: ModelServer) -> None:
    # Sessions are independent entity instances.
    model.script(Reply.text("a"), Reply.text("b"))
    one = run_batch(app, ENTITY, uuid.uuid4().hex, None, [("run", run_op("x", "c"))])
    two = run_batch(app, ENTITY, uuid.uuid4().hex, None, [("run", run_op("x", "c"))])
    assert one.results[0].value["text"] == "a" and two.results[0].value["text"] == "b"


def test_a_tombstone_expires_one_ttl_after_the_delete(
    app: df.DFApp, model: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_AGENTS_SESSION_TTL", "3600")
    model.script(Reply.text("x"))
    first = run_batch(app, ENTITY, "s-ttl", None, [("run", run_op("hi", "old"))])
    tombstone = run_batch(app, ENTITY, "s-ttl", first.state, [("delete", None)])
    assert tombstone.state is not None
    fresh = run_batch(app, ENTITY, "s-ttl", tombstone.state, [("expire", None)])
    [answer] = fresh.results
    assert answer.value["expired"] is False and answer.value["dueAt"] is not None
    aged = json.loads(tombstone.state)
    aged["data"]["lastActivityAt"] = "2020-01-01T00:00:00+00:00"
    gone = run_batch(app, ENTITY, "s-ttl", json.dumps(aged), [("expire", None)])
    assert gone.results[0].value["expired"] is True
    assert gone.exists is False


def test_a_run_parses_the_stored_state_once(
    app: df.DFApp, model: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A session a reset left marks in (data.discardedRuns): the run reads them from the state it
    # loaded, not by parsing the stored text again for each mark.
    import hosting.entity._context as context_module
    import hosting.stored._document as document_module
    import hosting.stored._marks as marks_module

    model.script(Reply.text("x"), Reply.text("y"))
    first = run_batch(app, ENTITY, "s-parse", None, [("run", run_op("hi", "old"))])
    reset = run_batch(app, ENTITY, "s-parse", first.state, [("reset", None)])
    assert reset.state is not None and json.loads(reset.state)["data"]["discardedRuns"] == ["old"]
    parses: list[str] = []
    real_load = context_module.load_state

    def counted_load(text: str) -> AgentState:
        parses.append("load_state")
        return real_load(text)

    class CountedJson:
        @staticmethod
        def loads(text: Any) -> Any:
            parses.append("json.loads")
            return json.loads(text)

        dumps = staticmethod(json.dumps)

    monkeypatch.setattr(context_module, "load_state", counted_load)
    monkeypatch.setattr(document_module, "json", CountedJson)
    monkeypatch.setattr(marks_module, "json", CountedJson)
    out = run_batch(app, ENTITY, "s-parse", reset.state, [("run", run_op("again", "new"))])
    assert out.results[0].value["status"] == "succeeded"
    assert parses == ["load_state"]


def test_a_users_first_turn_makes_the_session_theirs_and_resets_keep_it(
    app: df.DFApp, model: ModelServer
) -> None:
    model.script(Reply.text("hi u1"))
    out = run_batch(app, ENTITY, "own1", None, [("run", run_op("hi", "c1", userId="u1"))])
    assert out.results[0].is_error is False and out.state is not None
    assert load_state(out.state).user_id == "u1"
    reset = run_batch(app, ENTITY, "own1", out.state, [("reset", None)])
    assert reset.state is not None
    assert load_state(reset.state).user_id == "u1" and len(load_state(reset.state)) == 0
    deleted = run_batch(app, ENTITY, "own1", out.state, [("delete", None)])
    assert deleted.state is not None
    tombstone = json.loads(deleted.state)
    assert tombstone["data"]["deletedAt"] and tombstone["data"]["userId"] == "u1"


def test_another_users_turn_is_refused_and_stores_nothing(app: df.DFApp, model: ModelServer) -> None:
    model.script(Reply.text("hi u1"))
    out = run_batch(app, ENTITY, "own2", None, [("run", run_op("hi", "c1", userId="u1"))])
    for intruder in ({"userId": "u2"}, {}):
        other = run_batch(app, ENTITY, "own2", out.state, [("run", run_op("show me", "c2", **intruder))])
        assert other.results[0].is_error is True
        assert other.state == out.state
        # Not even a retried run id of the owner's is answered to another user.
        retry = run_batch(app, ENTITY, "own2", out.state, [("run", run_op("hi", "c1", **intruder))])
        assert retry.results[0].is_error is True and retry.state == out.state
    assert len(model.requests) == 1


def test_a_failed_first_turn_still_gives_the_session_its_owner(app: df.DFApp, model: ModelServer) -> None:
    model.script(Reply.error(400, "refused", code="content_filter"))
    out = run_batch(app, ENTITY, "own3", None, [("run", run_op("hi", "c1", userId="u1"))])
    assert out.results[0].value["status"] == "failed" and out.state is not None
    assert load_state(out.state).user_id == "u1"


def test_a_bad_user_in_the_operation_input_is_refused(app: df.DFApp, model: ModelServer) -> None:
    for bad in ("a/b", "", 7):
        out = run_batch(app, ENTITY, "own4", None, [("run", run_op("hi", "c1", userId=bad))])
        assert out.results[0].is_error is True and out.exists is False
    assert model.requests == []
