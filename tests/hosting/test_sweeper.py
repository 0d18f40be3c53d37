"""The expiry sweeper's schedule (its sweeping runs end to end in tests/e2e/test_e2e_long_session.py,
tests/e2e/test_e2e_stream_runs.py and tests/hosting/test_sweeper_rounds.py)."""

from __future__ import annotations

from datetime import timedelta

from hosting.lifecycle._names import sweeper_instance
from hosting.lifecycle._sweeper import MAX_INTERVAL, MIN_INTERVAL, sweep_interval


def test_a_sweep_comes_every_twentieth_of_the_ttl_within_bounds() -> None:
    assert sweep_interval(timedelta(seconds=60)) == timedelta(seconds=3)
    assert sweep_interval(timedelta(hours=1)) == timedelta(minutes=3)
    # Short TTLs (tests) are swept at most five times a second; long ones at least hourly.
    assert sweep_interval(timedelta(seconds=1)) == MIN_INTERVAL == timedelta(seconds=0.2)
    assert sweep_interval(timedelta(days=30)) == MAX_INTERVAL == timedelta(hours=1)


def test_one_sweeper_per_agent() -> None:
    assert sweeper_instance("assistant") == "dafx-sweeper-assistant"
    assert sweeper_instance("assistant") != sweeper_instance("concierge")
