"""ModelSettings is which model, how to reach it (ModelConnection, holding the only secret) and how
it samples (SamplingSettings, no secret); the key never shows in a repr, str, log line or error;
the model environment variable names are spelled in one place (agents.ModelEnv)."""

from __future__ import annotations

import dataclasses
import logging
import pathlib
import re

import pytest
from pydantic import SecretStr

from agents import (
    Agent,
    AgentConfigurationError,
    InputMessage,
    ModelConnection,
    ModelEnv,
    ModelSettings,
    RetryPolicy,
    SamplingSettings,
    TurnRequest,
)
from agents._settings import resolve_endpoint
from agents.testing import ModelServer, Reply
from state import AgentState, dump_state

KEY = "sk-very-secret-0123456789"
ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_shorthand_fills_the_two_parts() -> None:
    settings = ModelSettings(
        model="m", base_url="http://127.0.0.1:9/v1", api_key=KEY, temperature=0.2, max_output_tokens=9
    )
    assert settings.model == "m"
    assert settings.connection == ModelConnection(base_url="http://127.0.0.1:9/v1", api_key=SecretStr(KEY))
    assert settings.sampling == SamplingSettings(temperature=0.2, max_output_tokens=9)
    explicit = ModelSettings(
        "m",
        connection=ModelConnection(base_url="http://127.0.0.1:9/v1", api_key=KEY),
        sampling=SamplingSettings(temperature=0.2, max_output_tokens=9),
    )
    assert explicit == settings and hash(explicit) == hash(settings)
    changed = settings.replace(timeout=3.0, temperature=1.0)
    assert (changed.connection.timeout, changed.sampling.temperature) == (3.0, 1.0)
    assert changed.connection.key == KEY and settings.connection.timeout == 60.0
    with pytest.raises(TypeError, match="no setting tempreature"):
        ModelSettings(tempreature=1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.model = "other"


def test_sampling_holds_no_endpoint_or_secret() -> None:
    names = {f.name for f in dataclasses.fields(SamplingSettings)}
    assert names == {"temperature", "max_output_tokens", "extra_body"}
    connection = {f.name for f in dataclasses.fields(ModelConnection)}
    assert "api_key" in connection and not names & connection


def test_no_repr_str_or_error_shows_the_key() -> None:
    settings = ModelSettings(model="m", base_url="http://127.0.0.1:9/v1", api_key=KEY, temperature=0.1)
    agent = Agent(name="a", model=settings)
    endpoint = resolve_endpoint(settings, {})
    assert endpoint.api_key == KEY  # what the client is given
    for shown in (
        repr(settings),
        str(settings),
        repr(settings.connection),
        str(settings.connection),
        repr(endpoint),
        repr(agent.model),
        str(agent.describe()),
    ):
        assert KEY not in shown, shown
    with pytest.raises(AgentConfigurationError) as bad_url:
        ModelSettings(base_url=f"ftp://user:{KEY}@host/v1", api_key=KEY)
    assert KEY not in str(bad_url.value)
    with pytest.raises(AgentConfigurationError) as no_model:
        resolve_endpoint(ModelSettings(api_key=KEY), {})
    assert KEY not in str(no_model.value)


async def test_no_log_line_or_stored_failure_shows_the_key(
    model: ModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    model.script(Reply.error(401, f"Incorrect API key provided: {KEY[:3]}***"))
    settings = ModelSettings(
        model="m", base_url=model.base_url, api_key=KEY, retry=RetryPolicy(max_attempts=1)
    )
    state = AgentState.new()
    result = await Agent(name="a", model=settings).run(
        state, TurnRequest(correlation_id="c", messages=[InputMessage("user", "hi")])
    )
    assert result.status == "failed"
    assert model.requests[0].headers.get("Authorization") == f"Bearer {KEY}"  # it was used
    assert KEY not in caplog.text
    assert KEY not in dump_state(state)


def test_environment_names_are_spelled_only_in_model_env() -> None:
    names = [str(n) for n in ModelEnv]
    assert names == [n.value for n in ModelEnv] and len(names) == 9  # chat and embedding models
    pattern = re.compile("|".join(re.escape(f'"{n}"') for n in names))
    spelled = [
        str(path.relative_to(ROOT))
        for package in ("agents", "hosting", "examples", "state", "devhost")
        for path in (ROOT / package).rglob("*.py")
        if pattern.search(path.read_text())
    ]
    assert spelled == ["agents/_env.py"]
