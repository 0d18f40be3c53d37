"""Model settings: what to call, how, and the endpoint resolved from code overrides and the environment."""

from __future__ import annotations

import dataclasses
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from ._errors import AgentConfigurationError, ModelCallError

HistoryMode = Literal["local", "service"]
"""``local``: the stored history is replayed each turn; ``service``: the model service keeps it."""
WireApi = Literal["chat", "responses"]
Provider = Literal["auto", "openai", "azure"]

ALLOW_REQUESTS_ENV = "DURABLE_AGENTS_ALLOW_MODEL_REQUESTS"
DEFAULT_AZURE_API_VERSION = "2025-04-01-preview"
# Azure OpenAI serves the Responses API from this data-plane version on (or the v1 / "preview" paths).
_AZURE_RESPONSES_MIN_VERSION = "2025-03-01-preview"


@dataclass(frozen=True)
class RetryPolicy:
    """Our retry loop for 429, 5xx, timeouts and connection errors (the SDK's own retries are off).

    Delays grow as ``base_delay * 2**attempt`` (capped by ``max_delay``) with full jitter, and never
    undercut a ``Retry-After`` the service sent; nothing is retried past ``deadline`` seconds.
    """

    max_attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    deadline: float = 120.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise AgentConfigurationError("RetryPolicy.max_attempts must be at least 1")
        if self.base_delay < 0 or self.max_delay < 0 or self.deadline <= 0:
            raise AgentConfigurationError("RetryPolicy delays must be >= 0 and the deadline > 0")


@dataclass(frozen=True, kw_only=True)
class ModelSettings:
    """Which model to call and how; every ``None`` falls back to the environment at call time.

    Environment: ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``OPENAI_CHAT_MODEL_ID`` (OpenAI or any
    OpenAI-compatible server) and ``AZURE_OPENAI_ENDPOINT``, ``AZURE_OPENAI_CHAT_DEPLOYMENT_NAME``,
    ``AZURE_OPENAI_API_VERSION``, ``AZURE_OPENAI_API_KEY`` (without a key: Entra ID through
    ``DefaultAzureCredential``).
    """

    model: str | None = None
    temperature: float | None = None
    max_output_tokens: int | None = None
    wire_api: WireApi = "chat"
    provider: Provider = "auto"
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never in a repr, log line or error
    azure_endpoint: str | None = None
    azure_api_version: str | None = None
    timeout: float = 60.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    extra_body: Mapping[str, object] | None = None

    def __post_init__(self) -> None:
        if self.wire_api not in ("chat", "responses"):
            raise AgentConfigurationError(f"wire_api must be 'chat' or 'responses', not {self.wire_api!r}")
        if self.provider not in ("auto", "openai", "azure"):
            raise AgentConfigurationError(
                f"provider must be 'auto', 'openai' or 'azure', not {self.provider!r}"
            )
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            raise AgentConfigurationError("temperature must be between 0 and 2")
        if self.max_output_tokens is not None and self.max_output_tokens < 1:
            raise AgentConfigurationError("max_output_tokens must be positive")
        if self.timeout <= 0:
            raise AgentConfigurationError("timeout must be positive")
        for name in ("base_url", "azure_endpoint"):
            value = getattr(self, name)
            if value is not None and urlsplit(value).scheme not in ("http", "https"):
                # The scheme only: a URL may carry credentials (user:key@host).
                raise AgentConfigurationError(
                    f"{name} must be an http(s) URL, not one with scheme {urlsplit(value).scheme!r}"
                )

    def replace(self, **changes: object) -> ModelSettings:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Endpoint:
    """A fully resolved model endpoint; hashable, so it keys the per-event-loop client cache."""

    provider: Literal["openai", "azure"]
    model: str
    base_url: str | None
    api_key: str | None = field(default=None, repr=False)
    api_version: str | None = None

    @property
    def url(self) -> str:
        """The URL requests go to (the OpenAI default when no base URL is set)."""
        return self.base_url or "https://api.openai.com/v1"


def _env(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(name, "").strip()
    return value or None


def resolve_endpoint(settings: ModelSettings, environ: Mapping[str, str] | None = None) -> Endpoint:
    """Merge the settings with the environment; AgentConfigurationError when no model is configured."""
    env = os.environ if environ is None else environ
    provider = settings.provider
    if provider == "auto":
        if settings.azure_endpoint:
            provider = "azure"
        elif settings.base_url:
            provider = "openai"
        elif _env(env, "AZURE_OPENAI_ENDPOINT") and not _env(env, "OPENAI_BASE_URL"):
            provider = "azure"
        else:
            provider = "openai"
    if provider == "azure":
        endpoint = settings.azure_endpoint or _env(env, "AZURE_OPENAI_ENDPOINT")
        model = settings.model or _env(env, "AZURE_OPENAI_CHAT_DEPLOYMENT_NAME")
        if not endpoint:
            raise AgentConfigurationError("Azure OpenAI needs AZURE_OPENAI_ENDPOINT (or azure_endpoint)")
        if not model:
            raise AgentConfigurationError(
                "Azure OpenAI needs a deployment: AZURE_OPENAI_CHAT_DEPLOYMENT_NAME (or model=...)"
            )
        version = (
            settings.azure_api_version or _env(env, "AZURE_OPENAI_API_VERSION") or DEFAULT_AZURE_API_VERSION
        )
        key = settings.api_key or _env(env, "AZURE_OPENAI_API_KEY")
        return Endpoint("azure", model, endpoint.rstrip("/"), key, version)
    base_url = settings.base_url or _env(env, "OPENAI_BASE_URL")
    model = settings.model or _env(env, "OPENAI_CHAT_MODEL_ID")
    key = settings.api_key or _env(env, "OPENAI_API_KEY")
    if not model:
        raise AgentConfigurationError("no model configured: set OPENAI_CHAT_MODEL_ID (or model=...)")
    if base_url is None and key is None:
        raise AgentConfigurationError("no model endpoint configured: set OPENAI_API_KEY or OPENAI_BASE_URL")
    if base_url is not None and urlsplit(base_url).scheme not in ("http", "https"):
        raise AgentConfigurationError(f"OPENAI_BASE_URL must be an http(s) URL, got {base_url!r}")
    return Endpoint("openai", model, base_url.rstrip("/") if base_url else None, key, None)


def supports_responses(endpoint: Endpoint) -> bool:
    """Whether the endpoint can serve the Responses API (and so service-side history)."""
    if endpoint.provider != "azure":
        return True
    version = endpoint.api_version or ""
    if version in ("preview", "latest", "v1"):
        return True
    # Versions are ISO dates (optionally "-preview"), so string order is date order.
    return version[:10] >= _AZURE_RESPONSES_MIN_VERSION[:10]


def is_loopback_url(url: str) -> bool:
    """True when the URL's host is localhost or a loopback address."""
    host = (urlsplit(url).hostname or "").strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_requests_allowed(endpoint: Endpoint, environ: Mapping[str, str] | None = None) -> None:
    """Refuse non-loopback endpoints while DURABLE_AGENTS_ALLOW_MODEL_REQUESTS is "0" (the test suite)."""
    env = os.environ if environ is None else environ
    if env.get(ALLOW_REQUESTS_ENV, "").strip() == "0" and not is_loopback_url(endpoint.url):
        raise ModelCallError(
            "model_requests_disabled",
            f"{ALLOW_REQUESTS_ENV}=0 allows only loopback model endpoints; refusing {endpoint.url}",
            retryable=False,
        )
