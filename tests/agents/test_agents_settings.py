"""Model settings: endpoint resolution from code and environment, and the loopback guard."""

from __future__ import annotations

import pytest

from agents import AgentConfigurationError, ModelCallError, ModelSettings, RetryPolicy
from agents._settings import check_requests_allowed, is_loopback_url, resolve_endpoint, supports_responses


def test_openai_from_environment() -> None:
    env = {"OPENAI_API_KEY": "sk-1", "OPENAI_CHAT_MODEL_ID": "gpt-x"}
    endpoint = resolve_endpoint(ModelSettings(), env)
    assert (endpoint.provider, endpoint.model, endpoint.base_url, endpoint.api_key) == (
        "openai",
        "gpt-x",
        None,
        "sk-1",
    )
    assert endpoint.url == "https://api.openai.com/v1"
    assert "sk-1" not in repr(endpoint)


def test_compatible_endpoint_needs_no_key_and_code_overrides_env() -> None:
    env = {"OPENAI_BASE_URL": "http://localhost:11434/v1/", "OPENAI_CHAT_MODEL_ID": "llama"}
    endpoint = resolve_endpoint(ModelSettings(), env)
    assert (endpoint.base_url, endpoint.api_key, endpoint.model) == (
        "http://localhost:11434/v1",
        None,
        "llama",
    )
    overridden = resolve_endpoint(ModelSettings(model="phi", base_url="http://127.0.0.1:9/v1"), env)
    assert (overridden.model, overridden.base_url) == ("phi", "http://127.0.0.1:9/v1")


def test_azure_from_environment() -> None:
    env = {
        "AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com/",
        "AZURE_OPENAI_CHAT_DEPLOYMENT_NAME": "gpt4o",
        "AZURE_OPENAI_API_VERSION": "2024-10-21",
    }
    endpoint = resolve_endpoint(ModelSettings(), env)
    assert endpoint.provider == "azure"
    assert (endpoint.base_url, endpoint.model, endpoint.api_version) == (
        "https://res.openai.azure.com",
        "gpt4o",
        "2024-10-21",
    )
    assert endpoint.api_key is None  # Entra ID (DefaultAzureCredential) then
    assert not supports_responses(endpoint)
    with_key = resolve_endpoint(
        ModelSettings(azure_api_version="2025-03-01-preview"), {**env, "AZURE_OPENAI_API_KEY": "k"}
    )
    assert with_key.api_key == "k" and supports_responses(with_key)
    # OPENAI_BASE_URL wins over Azure variables (the local host sets it for the offline server).
    both = resolve_endpoint(
        ModelSettings(), {**env, "OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "OPENAI_CHAT_MODEL_ID": "local"}
    )
    assert (both.provider, both.model) == ("openai", "local")


@pytest.mark.parametrize(
    ("settings", "env", "message"),
    [
        (ModelSettings(), {}, "OPENAI_CHAT_MODEL_ID"),
        (ModelSettings(model="m"), {}, "OPENAI_API_KEY or OPENAI_BASE_URL"),
        (ModelSettings(provider="azure"), {}, "AZURE_OPENAI_ENDPOINT"),
        (ModelSettings(provider="azure"), {"AZURE_OPENAI_ENDPOINT": "https://x"}, "DEPLOYMENT_NAME"),
        (ModelSettings(model="m"), {"OPENAI_BASE_URL": "ftp://x"}, "http"),
    ],
)
def test_missing_configuration_is_a_configuration_error(
    settings: ModelSettings, env: dict[str, str], message: str
) -> None:
    with pytest.raises(AgentConfigurationError, match=message):
        resolve_endpoint(settings, env)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"wire_api": "websocket"},
        {"provider": "bedrock"},
        {"temperature": 3},
        {"max_output_tokens": 0},
        {"timeout": 0},
        {"base_url": "localhost:8080"},
    ],
)
def test_bad_settings_fail_at_definition(kwargs: dict[str, object]) -> None:
    with pytest.raises(AgentConfigurationError):
        ModelSettings(**kwargs)  # type: ignore[arg-type]


def test_bad_retry_policy() -> None:
    with pytest.raises(AgentConfigurationError):
        RetryPolicy(max_attempts=0)
    with pytest.raises(AgentConfigurationError):
        RetryPolicy(deadline=0)


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:8000/v1", True),
        ("http://127.5.4.3/v1", True),
        ("http://localhost/v1", True),
        ("http://[::1]:9/v1", True),
        ("https://api.openai.com/v1", False),
        ("http://10.0.0.1/v1", False),
        ("http://localhost.example.com/v1", False),
        ("http://127.0.0.1.nip.io/v1", False),
    ],
)
def test_is_loopback(url: str, loopback: bool) -> None:
    assert is_loopback_url(url) is loopback


def test_guard_refuses_non_loopback_only_when_disabled() -> None:
    remote = resolve_endpoint(ModelSettings(model="m", api_key="k"), {})
    with pytest.raises(ModelCallError) as caught:
        check_requests_allowed(remote, {"DURABLE_AGENTS_ALLOW_MODEL_REQUESTS": "0"})
    assert caught.value.code == "model_requests_disabled" and caught.value.retryable is False
    check_requests_allowed(remote, {})  # allowed when the switch is not "0"
    local = resolve_endpoint(ModelSettings(model="m", base_url="http://127.0.0.1:1/v1"), {})
    check_requests_allowed(local, {"DURABLE_AGENTS_ALLOW_MODEL_REQUESTS": "0"})


def test_api_key_never_shown() -> None:
    settings = ModelSettings(model="m", api_key="sk-very-secret")
    assert "sk-very-secret" not in repr(settings)
    assert "sk-very-secret" not in str(settings.replace(temperature=0.5))
    with pytest.raises(AgentConfigurationError) as refused:
        ModelSettings(base_url="ftp://user:sk-very-secret@example.com", api_key="sk-very-secret")
    assert "sk-very-secret" not in str(refused.value)
