"""The process's turn loop (hosting._loop): its model clients close when the process exits."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from hosting_support import ROOT

_SCRIPT = textwrap.dedent(
    """
    from agents import Agent, InputMessage, ModelSettings, TurnRequest
    from agents.testing import ModelServer, Reply
    from hosting._loop import run_sync
    from state import AgentState

    with ModelServer(mode="scripted") as server:
        server.script(Reply.text("answered"))
        agent = Agent(name="a", model=ModelSettings(model="m", base_url=str(server.base_url), api_key="k"))
        request = TurnRequest(correlation_id="c1", messages=[InputMessage("user", "hi")])
        print(run_sync(lambda: agent.run(AgentState.new(), request)).text)
    """
)


def test_the_turn_loops_model_clients_are_closed_at_exit() -> None:
    # Without the exit hook each aiohttp session of a model client is collected unclosed and
    # logs "Unclosed client session" (and its connector) on the way out.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DURABLE_AGENTS_ALLOW_MODEL_REQUESTS": "0"}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "answered"
    assert "Unclosed" not in done.stderr, done.stderr
