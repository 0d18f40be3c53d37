"""Model settings: what to call, how, and the endpoint resolved from code overrides and the environment."""

from __future__ import annotations

import dataclasses
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import SecretStr

from ._env import ModelEnv
from ._errors import AgentConfigurationError, FailureCode, ModelCallError

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
class ModelConnection:
    """Where and how the model service is reached: provider, endpoint, credential, API flavour,
    timeout and retries. Every ``None`` falls back to the environment (`ModelEnv`) at call time.

    ``api_key`` is a ``pydantic.SecretStr`` (a ``str`` is wrapped): its value is never in a
    ``repr``, ``str``, log line or error message.
    """

    provider: Provider = "auto"
    wire_api: WireApi = "chat"
    base_url: str | None = None
    api_key: SecretStr | str | None = field(default=None, repr=False)  # kept as a SecretStr
    azure_endpoint: str | None = None
    azure_api_version: str | None = None
    timeout: float = 60.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    def __post_init__(self) -> None:
        if isinstance(self.api_key, str):
            object.__setattr__(self, "api_key", SecretStr(self.api_key))
        if self.api_key is not None and not isinstance(self.api_key, SecretStr):
            raise AgentConfigurationError("api_key must be a string")
        if self.wire_api not in ("chat", "responses"):
            raise AgentConfigurationError(f"wire_api must be 'chat' or 'responses', not {self.wire_api!r}")
        if self.provider not in ("auto", "openai", "azure"):
            raise AgentConfigurationError(
                f"provider must be 'auto', 'openai' or 'azure', not {self.provider!r}"
            )
        if self.timeout <= 0:
            raise AgentConfigurationError("timeout must be positive")
        for name in ("base_url", "azure_endpoint"):
            value = getattr(self, name)
            if value is not None and urlsplit(value).scheme not in ("http", "https"):
                # The scheme only: a URL may carry credentials (user:key@host).
                raise AgentConfigurationError(
                    f"{name} must be an http(s) URL, not one with scheme {urlsplit(value).scheme!r}"
                )

    @property
    def key(self) -> str | None:
        """The API key's value (for the client only; never log it)."""
        return self.api_key.get_secret_value() if isinstance(self.api_key, SecretStr) else self.api_key


@dataclass(frozen=True, kw_only=True)
class SamplingSettings:
    """How the model samples an answer: no endpoint, no secret. A turn's ``options`` override
    ``temperature`` and ``max_output_tokens``; ``extra_body`` is merged into every request."""

    temperature: float | None = None
    max_output_tokens: int | None = None
    extra_body: Mapping[str, object] | None = None

    def __post_init__(self) -> None:
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            raise AgentConfigurationError("temperature must be between 0 and 2")
        if self.max_output_tokens is not None and self.max_output_tokens < 1:
            raise AgentConfigurationError("max_output_tokens must be positive")


_CONNECTION_FIELDS = frozenset(f.name for f in dataclasses.fields(ModelConnection))
_SAMPLING_FIELDS = frozenset(f.name for f in dataclasses.fields(SamplingSettings))


class ModelSettings:
    """Which model to call (``model``), how to reach it (``connection``: `ModelConnection`) and how
    it samples (``sampling``: `SamplingSettings`).

    The fields of both parts may also be given directly as keywords, as a shorthand:
    ``ModelSettings(model="gpt-4o", base_url=..., api_key=..., temperature=0.2)`` fills
    ``connection`` and ``sampling``. Environment fallbacks: `ModelEnv`.
    """

    __slots__ = ("connection", "model", "sampling")

    model: str | None
    connection: ModelConnection
    sampling: SamplingSettings

    def __init__(
        self,
        model: str | None = None,
        *,
        connection: ModelConnection | None = None,
        sampling: SamplingSettings | None = None,
        **fields: Any,
    ) -> None:
        unknown = sorted(set(fields) - _CONNECTION_FIELDS - _SAMPLING_FIELDS)
        if unknown:
            raise TypeError(f"ModelSettings has no setting {', '.join(unknown)}")
        conn = {k: v for k, v in fields.items() if k in _CONNECTION_FIELDS}
        samp = {k: v for k, v in fields.items() if k in _SAMPLING_FIELDS}
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "connection", dataclasses.replace(connection or ModelConnection(), **conn))
        object.__setattr__(self, "sampling", dataclasses.replace(sampling or SamplingSettings(), **samp))

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ModelSettings):
            return NotImplemented
        return (self.model, self.connection, self.sampling) == (other.model, other.connection, other.sampling)

    def __hash__(self) -> int:
        return hash((self.model, self.connection, self.sampling))

    def __repr__(self) -> str:
        return (
            f"ModelSettings(model={self.model!r}, connection={self.connection!r}, sampling={self.sampling!r})"
        )

    def replace(self, **changes: Any) -> ModelSettings:
        """A copy with some settings changed (``model``, ``connection``, ``sampling`` or any field
        of the two parts)."""
        model = changes.pop("model", self.model)
        connection = changes.pop("connection", self.connection)
        sampling = changes.pop("sampling", self.sampling)
        return ModelSettings(model, connection=connection, sampling=sampling, **changes)


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


def resolve_provider(conn: ModelConnection, env: Mapping[str, str]) -> Literal["openai", "azure"]:
    """The provider a connection reaches: as set, else Azure when an Azure endpoint is given (in
    code, or in the environment without an OpenAI base URL), else OpenAI."""
    if conn.provider != "auto":
        return conn.provider
    if conn.azure_endpoint:
        return "azure"
    if conn.base_url:
        return "openai"
    if _env(env, ModelEnv.AZURE_OPENAI_ENDPOINT) and not _env(env, ModelEnv.OPENAI_BASE_URL):
        return "azure"
    return "openai"


def resolve_endpoint(settings: ModelSettings, environ: Mapping[str, str] | None = None) -> Endpoint:
    """Merge the settings with the environment; AgentConfigurationError when no model is configured."""
    env = os.environ if environ is None else environ
    conn = settings.connection
    if resolve_provider(conn, env) == "azure":
        return _azure_endpoint(settings, env)
    base_url = conn.base_url or _env(env, ModelEnv.OPENAI_BASE_URL)
    model = settings.model or _env(env, ModelEnv.OPENAI_CHAT_MODEL_ID)
    key = conn.key or _env(env, ModelEnv.OPENAI_API_KEY)
    if not model:
        raise AgentConfigurationError(
            f"no model configured: set {ModelEnv.OPENAI_CHAT_MODEL_ID} (or model=...)"
        )
    if base_url is None and key is None:
        raise AgentConfigurationError(
            f"no model endpoint configured: set {ModelEnv.OPENAI_API_KEY} or {ModelEnv.OPENAI_BASE_URL}"
        )
    if base_url is not None and urlsplit(base_url).scheme not in ("http", "https"):
        raise AgentConfigurationError(
            f"{ModelEnv.OPENAI_BASE_URL} must be an http(s) URL, not one with scheme "
            f"{urlsplit(base_url).scheme!r}"
        )
    return Endpoint("openai", model, base_url.rstrip("/") if base_url else None, key, None)


def _azure_endpoint(settings: ModelSettings, env: Mapping[str, str]) -> Endpoint:
    conn = settings.connection
    endpoint = conn.azure_endpoint or _env(env, ModelEnv.AZURE_OPENAI_ENDPOINT)
    model = settings.model or _env(env, ModelEnv.AZURE_OPENAI_CHAT_DEPLOYMENT_NAME)
    if not endpoint:
        raise AgentConfigurationError(
            f"Azure OpenAI needs {ModelEnv.AZURE_OPENAI_ENDPOINT} (or azure_endpoint)"
        )
    if not model:
        raise AgentConfigurationError(
            f"Azure OpenAI needs a deployment: {ModelEnv.AZURE_OPENAI_CHAT_DEPLOYMENT_NAME} (or model=...)"
        )
    version = (
        conn.azure_api_version or _env(env, ModelEnv.AZURE_OPENAI_API_VERSION) or DEFAULT_AZURE_API_VERSION
    )
    key = conn.key or _env(env, ModelEnv.AZURE_OPENAI_API_KEY)
    return Endpoint("azure", model, endpoint.rstrip("/"), key, version)


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
            FailureCode.MODEL_REQUESTS_DISABLED,
            f"{ALLOW_REQUESTS_ENV}=0 allows only loopback model endpoints; refusing {endpoint.url}",
            retryable=False,
        )
