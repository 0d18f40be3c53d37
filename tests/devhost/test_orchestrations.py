"""The orchestration engine end to end: real orchestrator, activity and entity functions.

Entities run through the Durable JSON batch protocol in a small in-test gateway (state kept
in memory, one operation at a time per entity), so these tests exercise the engine alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import pathlib
import sys
import threading
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import pytest

from devhost import list_functions
from devhost.functions import index_metadata
from devhost.orchestrations._engine import OrchestrationEngine
from devhost.worker import Topology, Workers, WorkerSpec

APPS = pathlib.Path(__file__).parent / "apps"
if str(APPS) not in sys.path:
    sys.path.insert(0, str(APPS))

import orch_app  # noqa: E402

LOG = logging.getLogger("test.orchestrations")
FINAL = ("Completed", "Failed", "Terminated")


class BatchGateway:
    """Runs the app's entity functions one operation per batch, state kept in memory."""

    def __init__(self, app: Any) -> None:
        self.functions: dict[str, Any] = {}
        for function in list_functions(app):
            for binding in function.get_bindings():
                spec = binding.get_dict_repr()
                if spec.get("type") == "entityTrigger":
                    name = spec.get("entityName") or function.get_function_name()
                    self.functions[name.lower()] = function.get_user_function()
        self.states: dict[str, str | None] = {}
        self.locks: dict[str, asyncio.Lock] = {}
        self.operations: list[tuple[str, str, Any, bool]] = []

    async def _run(self, entity_id: str, operation: str, value: Any, signal: bool) -> tuple[bool, Any]:
        name, _, key = entity_id[1:].partition("@")
        lock = self.locks.setdefault(entity_id, asyncio.Lock())
        async with lock:
            self.operations.append((entity_id, operation, value, signal))
            context = {
                "self": {"name": name, "key": key},
                "state": self.states.get(entity_id),
                "exists": entity_id in self.states,
                "batch": [{"name": operation, "signal": signal, "input": json.dumps(json.dumps(value))}],
            }
            # The app's own entity functions are sync (the SDK's); hosting's are coroutine functions.
            answered = self.functions[name](json.dumps(context))
            answer = json.loads(await answered if inspect.isawaitable(answered) else answered)
            if answer["entityExists"]:
                self.states[entity_id] = answer["entityState"]
            result = answer["results"][0]
            return (not result["isError"], json.loads(result["result"]))

    async def call(
        self, entity_id: str, operation: str, input: Any, *, parent: str | None = None
    ) -> tuple[bool, Any]:
        return await self._run(entity_id, operation, input, False)

    async def signal(self, entity_id: str, operation: str, input: Any, *, scheduled_time: Any = None) -> None:
        await self._run(entity_id, operation, input, True)


@pytest.fixture
def gateway() -> BatchGateway:
    return BatchGateway(orch_app.app)


@contextlib.asynccontextmanager
async def started_engine(db: pathlib.Path, gateway: BatchGateway) -> AsyncIterator[OrchestrationEngine]:
    """An engine whose orchestrators and activities run through the runtime (in this process)."""
    spec = WorkerSpec(function_app_directory=str(APPS), app=orch_app.app)
    workers = Workers(spec, topology=Topology.SINGLE, count=1, temp_root=db.parent, log=LOG)
    model = index_metadata(await workers.start())
    eng = OrchestrationEngine(db_path=db, workers=workers, model=model, entities=gateway, logger=LOG)
    await eng.start()
    try:
        yield eng
    finally:
        await eng.stop()
        await workers.stop()


@pytest.fixture
async def engine(tmp_path: pathlib.Path, gateway: BatchGateway) -> AsyncIterator[OrchestrationEngine]:
    async with started_engine(tmp_path / "host.db", gateway) as eng:
        yield eng


async def wait_for(
    engine: OrchestrationEngine, iid: str, statuses: tuple[str, ...] = FINAL, timeout: float = 30
) -> dict[str, Any]:
    """Poll until the instance reaches one of ``statuses``."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        status = await engine.get_status(iid, show_history=True, show_history_output=True, show_input=True)
        if status is not None and status["runtimeStatus"] in statuses:
            return status
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{iid} did not reach {statuses}: {status}")
        await asyncio.sleep(0.01)


async def run(
    engine: OrchestrationEngine, name: str, input: Any = None, iid: str | None = None
) -> dict[str, Any]:
    instance_id = await engine.start_new(name, iid, input)
    return await wait_for(engine, instance_id)


async def test_activity_chain(engine: OrchestrationEngine) -> None:
    status = await run(engine, "chain", ["Tokyo", "Seattle"], iid="chain-1")
    assert status["runtimeStatus"] == "Completed", status
    assert status["output"] == {
        "greetings": ["Hello Tokyo!", "Hello Seattle!"],
        "echo": {"echo": {"n": 2}},
        "replaying_at_end": False,
    }
    assert status["input"] == ["Tokyo", "Seattle"]
    assert status["name"] == "chain" and status["instanceId"] == "chain-1"
    kinds = [e["EventType"] for e in status["historyEvents"]]
    assert kinds[0] == "ExecutionStarted" and kinds[-1] == "ExecutionCompleted"
    completed = [e for e in status["historyEvents"] if e["EventType"] == "TaskCompleted"]
    assert [e["FunctionName"] for e in completed] == ["say_hello", "say_hello", "async_echo"]
    assert completed[0]["Result"] == "Hello Tokyo!"


async def test_fan_out_fan_in(engine: OrchestrationEngine) -> None:
    status = await run(engine, "fan_out", 40)
    assert status["runtimeStatus"] == "Completed", status
    assert status["output"] == sum(2 * i for i in range(40))


async def test_task_any_event_wins_over_timer(engine: OrchestrationEngine) -> None:
    iid = await engine.start_new("approval", None, {"timeout": 30})
    waiting = await wait_for(engine, iid, ("Running",))
    assert waiting["customStatus"] == {"stage": "waiting"}
    assert await engine.raise_event(iid, "approval", {"by": "alice"})
    status = await wait_for(engine, iid)
    assert status["output"] == {"approved": {"by": "alice"}}
    assert status["customStatus"] == {"stage": "approved"}


async def test_task_any_timer_wins(engine: OrchestrationEngine) -> None:
    status = await run(engine, "approval", {"timeout": 0.2})
    assert status["runtimeStatus"] == "Completed"
    assert status["output"] == {"approved": None}
    assert status["customStatus"] == {"stage": "timed out"}
    fired = [e for e in status["historyEvents"] if e["EventType"] == "TimerFired"]
    assert len(fired) == 1


async def test_durable_timer_and_deterministic_clock(engine: OrchestrationEngine) -> None:
    status = await run(engine, "sleeper", 0.25)
    assert status["runtimeStatus"] == "Completed", status
    out = status["output"]
    waited = datetime.fromisoformat(out["after"]) - datetime.fromisoformat(out["start"])
    assert waited.total_seconds() >= 0.25
    # The clock and new_uuid come from history, identical in every replay.
    started = next(e for e in status["historyEvents"] if e["EventType"] == "ExecutionStarted")
    assert datetime.fromisoformat(out["start"]) == datetime.fromisoformat(started["Timestamp"])
    assert out["echoed"] == {"echo": out["uuid"]}


async def test_external_events_before_and_after_the_wait(engine: OrchestrationEngine) -> None:
    iid = await engine.start_new("wait_twice", None, None)
    # "second" arrives before the orchestrator waits for it: the SDK buffers it from history.
    assert await engine.raise_event(iid, "second", 2)
    await asyncio.sleep(0.1)
    running = await wait_for(engine, iid, ("Running",))
    assert running["customStatus"] is None
    assert await engine.raise_event(iid, "first", {"one": 1})
    status = await wait_for(engine, iid)
    assert status["output"] == [{"one": 1}, 2]
    assert status["customStatus"] == "got first"
    assert not await engine.raise_event("no-such-instance", "first", 1)


async def test_sub_orchestrations(engine: OrchestrationEngine) -> None:
    status = await run(engine, "parent", None, iid="parent-1")
    assert status["runtimeStatus"] == "Completed", status
    out = status["output"]
    assert out["child"]["greetings"] == ["Hello Ada!"]
    assert out["doubled"] == 2
    assert "bad input: from parent" in out["child_error"]
    child = await engine.get_status(
        "parent-1:0000", show_history=False, show_history_output=False, show_input=True
    )
    assert child is not None and child["runtimeStatus"] == "Completed" and child["input"] == ["Ada"]


async def test_continue_as_new(engine: OrchestrationEngine) -> None:
    status = await run(engine, "countdown", {"n": 4, "total": 0})
    assert status["runtimeStatus"] == "Completed", status
    assert status["output"] == 2 * (4 + 3 + 2 + 1)
    # The history is the last execution's only.
    assert status["input"] == {"n": 1, "total": 18}
    assert sum(1 for e in status["historyEvents"] if e["EventType"] == "ExecutionStarted") == 1


async def test_activity_failure_fails_the_orchestration(engine: OrchestrationEngine) -> None:
    status = await run(engine, "failing", "x1")
    assert status["runtimeStatus"] == "Failed"
    assert "Orchestrator function 'failing' failed" in status["output"]
    assert "ValueError: bad input: x1" in status["output"]


async def test_failures_can_be_caught(engine: OrchestrationEngine) -> None:
    status = await run(engine, "catching")
    assert status["runtimeStatus"] == "Completed", status
    out = status["output"]
    assert "Activity function 'explode' failed: ValueError: caught" in out["caught"]
    assert "no_such_activity" in out["missing"]
    assert "call_http is not supported" in out["http"]


async def test_activity_retries(engine: OrchestrationEngine) -> None:
    status = await run(engine, "retrying", "r1")
    assert status["runtimeStatus"] == "Completed", status
    assert status["output"]["ok"] == "ok after 3"
    assert status["output"]["after"] == 42
    assert "ValueError: always" in status["output"]["exhausted"]
    assert orch_app.CALLS["flaky:r1"] == 3


async def test_entity_calls_and_signals(engine: OrchestrationEngine, gateway: BatchGateway) -> None:
    status = await run(engine, "entity_user", "k1")
    assert status["runtimeStatus"] == "Completed", status
    out = status["output"]
    assert out["first"] == 5
    assert out["total"] == 6  # the signal sent before the call was applied first
    assert "counter exploded" in out["error"]
    assert out["both"] == [16, 8]
    assert json.loads(gateway.states["@counter@k1"] or "null") == 16
    assert [op for _, op, _, _ in gateway.operations] == ["add", "add", "get", "boom", "add"]
    assert [signal for *_, signal in gateway.operations] == [False, True, False, False, False]


async def test_terminate_query_and_purge(engine: OrchestrationEngine) -> None:
    iid = await engine.start_new("wait_twice", "term-1", None)
    await wait_for(engine, iid, ("Running",))
    with pytest.raises(ValueError):
        await engine.start_new("wait_twice", "term-1", None)
    with pytest.raises(KeyError):
        await engine.start_new("no_such_orchestrator", None, None)
    done = await run(engine, "chain", ["Q"], iid="term-2")
    assert done["runtimeStatus"] == "Completed"

    running = await engine.query(
        runtime_status=["Running"], created_from=None, created_to=None, instance_id_prefix="term-"
    )
    assert [s["instanceId"] for s in running] == ["term-1"]
    every = await engine.query(
        runtime_status=None, created_from=None, created_to=None, instance_id_prefix="term"
    )
    assert {s["instanceId"] for s in every} == {"term-1", "term-2"}
    none = await engine.query(
        runtime_status=None, created_from="2999-01-01T00:00:00Z", created_to=None, instance_id_prefix=None
    )
    assert none == []

    assert await engine.terminate(iid, "no longer needed")
    status = await wait_for(engine, iid)
    assert status["runtimeStatus"] == "Terminated"
    assert status["output"] == "no longer needed"
    assert await engine.raise_event(iid, "first", 1)  # accepted, but a finished instance ignores it
    await asyncio.sleep(0.05)
    assert (await wait_for(engine, iid))["runtimeStatus"] == "Terminated"
    assert not await engine.terminate("missing", "x")

    # A finished id can be started again.
    again = await run(engine, "chain", ["R"], iid="term-2")
    assert again["output"]["greetings"] == ["Hello R!"]

    assert await engine.purge(iid)
    assert (
        await engine.get_status(iid, show_history=False, show_history_output=False, show_input=False) is None
    )
    assert not await engine.purge(iid)


async def test_suspend_and_resume(engine: OrchestrationEngine) -> None:
    iid = await engine.start_new("wait_twice", None, None)
    await wait_for(engine, iid, ("Running",))
    assert await engine.suspend(iid, "hold on")
    assert (await wait_for(engine, iid, ("Suspended",)))["runtimeStatus"] == "Suspended"
    await engine.raise_event(iid, "first", 1)
    await engine.raise_event(iid, "second", 2)
    await asyncio.sleep(0.1)
    assert (await wait_for(engine, iid, ("Suspended",)))["customStatus"] is None
    assert await engine.resume(iid, "go")
    status = await wait_for(engine, iid)
    assert status["output"] == [1, 2]
    assert not await engine.suspend("missing", "x")


async def test_non_determinism_is_reported(engine: OrchestrationEngine) -> None:
    orch_app.CALLS.pop("drifting", None)
    status = await run(engine, "drifting")
    assert status["runtimeStatus"] == "Failed"
    assert "Non-deterministic" in status["output"]


async def test_restart_resumes_work(tmp_path: pathlib.Path, gateway: BatchGateway) -> None:
    db = tmp_path / "host.db"
    stack = contextlib.AsyncExitStack()
    first = await stack.enter_async_context(started_engine(db, gateway))
    orch_app.GATES.pop("restart", None)
    orch_app.CALLS.pop("gated:restart", None)
    iid = await first.start_new("gate_keeper", "restart-1", "restart")
    await wait_for(first, iid, ("Running",))
    for _ in range(1000):
        if orch_app.CALLS.get("gated:restart"):
            break
        await asyncio.sleep(0.01)
    assert orch_app.CALLS.get("gated:restart") == 1
    timer_iid = await first.start_new("sleeper", "restart-2", 0.3)
    await wait_for(first, timer_iid, ("Running",))
    await stack.aclose()  # the activity is still blocked: its result is never delivered

    blocked = orch_app.GATES["restart"]
    orch_app.GATES["restart"] = threading.Event()
    orch_app.GATES["restart"].set()
    async with started_engine(db, gateway) as second:
        blocked.set()  # the first run's thread finishes; nobody listens to it any more
        status = await wait_for(second, iid)
        assert status["runtimeStatus"] == "Completed", status
        assert status["output"] == "passed restart"
        assert orch_app.CALLS["gated:restart"] == 2  # re-issued once after the restart
        slept = await wait_for(second, timer_iid)
        assert slept["runtimeStatus"] == "Completed"


async def test_sub_orchestration_retries(engine: OrchestrationEngine) -> None:
    status = await run(engine, "retrying_parent", "sr1", iid="retry-parent")
    assert status["runtimeStatus"] == "Completed", status
    out = status["output"]
    assert out["child"] == {"child_result": "ok after 3", "parent": "retry-parent"}
    assert orch_app.CALLS["flaky:sr1"] == 3
    assert "bad input: twice" in out["error"]


async def test_oldest_replay_schema(engine: OrchestrationEngine) -> None:
    """Schema 0 answers with nested action lists instead of WhenAll/WhenAny compounds."""
    engine.replay_schema = 0
    fan = await run(engine, "fan_out", 12)
    assert fan["output"] == sum(2 * i for i in range(12))
    raced = await run(engine, "approval", {"timeout": 0.05})
    assert raced["output"] == {"approved": None}
    entity = await run(engine, "entity_user", "schema0")
    assert entity["output"]["total"] == 6 and entity["output"]["both"] == [16, 8]
    retried = await run(engine, "retrying", "schema0")
    assert retried["output"]["ok"] == "ok after 3", retried
    child = await run(engine, "parent")
    assert child["output"]["child"]["greetings"] == ["Hello Ada!"]


async def test_terminated_child_fails_the_parents_task(engine: OrchestrationEngine) -> None:
    parent_id = await engine.start_new("parent_of_waiter", None, "waiting-child")
    await wait_for(engine, "waiting-child", ("Running",))
    assert await engine.terminate("waiting-child", "operator said so")
    status = await wait_for(engine, parent_id)
    assert status["runtimeStatus"] == "Completed"
    assert "terminated: operator said so" in status["output"]["child_failed"]


async def test_internal_errors_fail_the_instance_visibly(
    engine: OrchestrationEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = await engine.start_new("wait_twice", None, None)
    await wait_for(engine, iid, ("Running",))

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(engine._episodes, "_run_orchestrator", broken)
    await engine.raise_event(iid, "first", 1)
    status = await wait_for(engine, iid)
    assert status["runtimeStatus"] == "Failed"
    assert "local host error" in status["output"] and "disk on fire" in status["output"]


async def test_function_names_are_case_insensitive(engine: OrchestrationEngine) -> None:
    status = await run(engine, "CHAIN", ["Case"])
    assert status["runtimeStatus"] == "Completed", status
    assert status["output"]["greetings"] == ["Hello Case!"]


async def test_suspend_before_the_first_episode(engine: OrchestrationEngine) -> None:
    # Both calls queue on the engine's database thread before the first episode is scheduled.
    iid, suspended = await asyncio.gather(
        engine.start_new("chain", "early", ["E"]), engine.suspend("early", "wait")
    )
    assert iid == "early" and suspended
    await asyncio.sleep(0.05)
    status = await engine.get_status(iid, show_history=True, show_history_output=False, show_input=True)
    assert status is not None and status["runtimeStatus"] == "Suspended"
    assert status["historyEvents"] == []
    assert await engine.resume(iid, "go")
    done = await wait_for(engine, iid)
    assert done["output"]["greetings"] == ["Hello E!"]
