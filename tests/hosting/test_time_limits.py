"""The run operation's time limits: the turn deadline setting, the functionTimeout the app reads as
the Functions host does (the app setting, else its own host.json, else Flex Consumption's 30
minutes), and the batch budget below it. Slow turns over real sockets: tests/e2e/test_e2e_time_limits.py."""

from __future__ import annotations

import asyncio
import json
import pathlib
import threading
import time

import pytest
from hosting_support import ROOT, make_agents

from agents.testing import ModelServer
from hosting import build_app
from hosting._errors import HostingConfigurationError
from hosting._loop import CANCEL_GRACE_SECONDS, DeadlinePassed, run_sync
from hosting.entity._deadline import TimeLimits


def limits(tmp_path: pathlib.Path, host_json: dict[str, object] | None, **env: str) -> TimeLimits:
    if host_json is not None:
        (tmp_path / "host.json").write_text(json.dumps(host_json))
    return TimeLimits.from_env(env, tmp_path)


def test_the_function_timeout_comes_from_the_apps_own_host_json(tmp_path: pathlib.Path) -> None:
    assert limits(tmp_path, {"functionTimeout": "00:10:00"}).function_timeout == 600
    assert limits(tmp_path, {"functionTimeout": "1.00:00:01.5"}).function_timeout == 86401.5
    assert limits(tmp_path, {"functionTimeout": "-1"}).function_timeout is None  # unbounded
    # The Functions host's override of a host.json value wins, as it does there.
    override = {"AzureFunctionsJobHost__functionTimeout": "00:02:00"}
    assert limits(tmp_path, {"functionTimeout": "00:10:00"}, **override).function_timeout == 120


def test_without_one_it_is_flex_consumptions_default(tmp_path: pathlib.Path) -> None:
    assert limits(tmp_path, None).function_timeout == 1800
    assert limits(tmp_path, {"version": "2.0"}).function_timeout == 1800


def test_the_projects_host_json_fits_three_turns_at_their_deadline_in_a_batch() -> None:
    """The deployed values: three turns at the default deadline fit in functionTimeout less the
    margin, so a full batch of turns that all hit the deadline is still answered."""
    deployed = TimeLimits.from_env({}, ROOT)
    durable = json.loads((ROOT / "host.json").read_text())["extensions"]["durableTask"]
    size = durable["maxEntityOperationBatchSize"]
    assert deployed.function_timeout == 600 and deployed.turn_deadline == 180
    assert deployed.batch_budget == 540
    assert size * deployed.turn_deadline <= deployed.batch_budget


def test_the_margin_is_a_minute_or_a_fifth_of_a_short_timeout() -> None:
    assert TimeLimits(function_timeout=1800).batch_budget == 1740
    assert TimeLimits(function_timeout=5).batch_budget == 4
    assert TimeLimits(function_timeout=None).batch_budget is None


@pytest.mark.parametrize("value", ["0", "0.5", "3601", "nan", "1e300", "\u0663"])
def test_a_turn_deadline_out_of_range_stops_the_app(
    model: ModelServer, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("DURABLE_AGENTS_TURN_DEADLINE_SECONDS", value)
    with pytest.raises(HostingConfigurationError) as refused:
        build_app(make_agents(model))
    message = str(refused.value)
    assert "DURABLE_AGENTS_TURN_DEADLINE_SECONDS" in message and repr(value) in message
    assert "from 1 to 3600" in message, message


@pytest.mark.parametrize("value", ["10", "00:60:00", "00:00:00", "soon", "-2"])
def test_a_function_timeout_the_host_refuses_stops_the_app(
    model: ModelServer, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("AzureFunctionsJobHost__functionTimeout", value)
    with pytest.raises(HostingConfigurationError) as refused:
        build_app(make_agents(model))
    message = str(refused.value)
    assert "AzureFunctionsJobHost__functionTimeout" in message and repr(value) in message


def test_a_turn_deadline_in_range_starts_the_app(model: ModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DURABLE_AGENTS_TURN_DEADLINE_SECONDS", "1.5")
    assert build_app(make_agents(model)) is not None
    assert TimeLimits.from_env().turn_deadline == 1.5


def test_run_sync_cancels_an_awaitable_at_its_deadline() -> None:
    cancelled = threading.Event()

    async def slow() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    started = time.monotonic()
    with pytest.raises(DeadlinePassed):
        run_sync(slow, 0.2)
    assert 0.2 <= time.monotonic() - started < 2 and cancelled.is_set()
    assert run_sync(lambda: asyncio.sleep(0, "in time"), 5) == "in time"


def test_run_sync_stops_waiting_for_an_awaitable_that_ignores_its_cancellation() -> None:
    async def stubborn() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            await asyncio.sleep(5)  # does not end when told to

    started = time.monotonic()
    with pytest.raises(DeadlinePassed):
        run_sync(stubborn, 0.2)
    assert time.monotonic() - started < 0.2 + CANCEL_GRACE_SECONDS + 1


def test_an_awaitables_own_timeout_error_is_not_a_passed_deadline() -> None:
    async def raises() -> None:
        raise TimeoutError("the awaitable's own")

    with pytest.raises(TimeoutError, match="the awaitable's own"):
        run_sync(raises, 5)
