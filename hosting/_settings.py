"""The app's settings, read from the environment once, when `build_app` starts the app.

`HostingSettings.load()` reads every app setting hosting has (docs/hosting.md "Settings"), each
under the exact name it is documented with, and checks it: a value no request could work with
stops the app at startup with a `HostingConfigurationError` naming the setting. `build_app` hands
each part its section (`streams`, `archive`, `mcp`, `webhooks`, `lifecycle`, `limits`, `auth`);
nothing in hosting reads the environment for an app setting but this module (a test pins it).
`ApiSettings` holds the HTTP API's limits and public origin (from the loaded settings in
`build_app`), and a session's size limit (the entity enforces it, the HTTP side checks it before
sending a turn)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from state import ArchivePolicy

from ._errors import HostingConfigurationError
from ._hub import LOCAL_HUB, SITE_ENV, task_hub
from ._numbers import number_setting

MAX_BODY_BYTES = 256 * 1024
"""Largest accepted request body (256 KiB); larger bodies get 413 `body_too_large`."""

DEFAULT_MAX_SESSION_BYTES = 960 * 1024
"""Default session size limit: under the local host's (and the Durable Task Scheduler's) 1 MiB,
so this check, which records a failed turn, fires before the host refuses to store the state."""

MIN_SESSION_BYTES = 1024
"""Smallest accepted `max_session_bytes` (an empty state alone is ~100 bytes)."""

RECORD_HEADROOM_BYTES = 64 * 1024
"""How far past `max_session_bytes` a session may grow by refusals (default limit + headroom =
1 MiB): compact records of refused turns up to 48 KiB, then only their ids (`data.refusedRuns`,
at most 16 KiB, hosting.stored), so every refused run keeps an answer."""

SESSION_LIMIT_ENV = "DURABLE_AGENTS_MAX_SESSION_BYTES"

MAX_SESSION_LIMIT_BYTES = 64 * 1024 * 1024
"""The largest `max_session_bytes` the setting takes (64 MiB: every turn loads the whole state)."""

PUBLIC_BASE_URL_ENV = "DURABLE_AGENTS_PUBLIC_BASE_URL"
HOSTNAME_ENV = "WEBSITE_HOSTNAME"
"""Set by Azure, func start and the local host: the app's host name (and port)."""


@dataclass(frozen=True)
class Bounds:
    """A numeric setting's range and unit (`number_setting` checks it and words the refusal)."""

    low: float
    high: float
    unit: str
    whole: bool = False


class Text:
    """A text setting read as `number_setting` reads its values: stripped, blank meaning unset."""


TEXT = Text()


class Section(BaseModel):
    """Part of the settings: each field's alias is the app setting it is read from."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _from_text(cls, value: Any, info: ValidationInfo) -> Any:
        # App settings arrive as text: read the way hosting always read them (`number_setting`:
        # ASCII only, its refusal naming the setting, unit and range), not by pydantic's coercion,
        # which takes other scripts' digits and words its errors by field. Values given in code
        # (not text) are pydantic's to check.
        if not isinstance(value, str) or info.field_name is None:
            return value
        spec = cls.model_fields[info.field_name]
        name = str(spec.validation_alias or info.field_name)
        for mark in spec.metadata:
            if isinstance(mark, Bounds):
                found = number_setting(
                    {name: value}, name, low=mark.low, high=mark.high, unit=mark.unit, whole=mark.whole
                )
                return spec.default if found is None else int(found) if mark.whole else found
            if isinstance(mark, Text):
                return value.strip() or spec.default
            if isinstance(mark, Flag):
                return flag(value)
        return value

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None) -> Self:
        """This section alone, read from `environ` (default: the environment) now: for a part
        used without `build_app`, which reads every setting once (`HostingSettings.load`)."""
        env = os.environ if environ is None else environ
        aliases = (str(f.validation_alias) for f in cls.model_fields.values() if f.validation_alias)
        try:
            return cls.model_validate({alias: env[alias] for alias in aliases if alias in env})
        except ValidationError as error:
            raise _refusal(error) from None

    @classmethod
    def read_one(cls, field_name: str) -> Any:
        """One setting of this section read from the environment now, alone: for the parts'
        `*_from_env` helpers, used without `build_app` (which reads every setting once)."""
        alias = str(cls.model_fields[field_name].validation_alias)
        given = {alias: os.environ[alias]} if alias in os.environ else {}
        try:
            return getattr(cls.model_validate(given), field_name)
        except ValidationError as error:
            raise _refusal(error) from None


class Flag:
    """An on/off setting: `1`, `true` or `yes` (any case) is on, anything else off."""


FLAG = Flag()


def flag(value: str | None) -> bool:
    """What the app's on/off settings count as on (`1`, `true`, `yes`)."""
    return (value or "").strip().lower() in ("1", "true", "yes")


def _setting(name: str, default: Any = None) -> Any:
    return Field(default, validation_alias=name)

# The settings' names (each part re-exports its own): hosting.streams (docs/streaming.md).
STREAM_REDIS_ENV = "DURABLE_AGENTS_STREAM_REDIS"
"""Redis connection URL (``rediss://host:port`` for Azure); set: the Redis Streams backend."""
STREAM_REDIS_ENTRA_ENV = "DURABLE_AGENTS_STREAM_REDIS_ENTRA"
"""``true``: authenticate to Redis with Microsoft Entra ID (DefaultAzureCredential) instead of a key."""
STREAM_REDIS_CLUSTER_ENV = "DURABLE_AGENTS_STREAM_REDIS_CLUSTER"
"""``true``: the Redis server is a cluster (Azure Managed Redis' OSS cluster policy); also detected."""
STREAM_PATH_ENV = "DURABLE_AGENTS_STREAM_PATH"
"""File of the embedded SQLite store (default: see `hosting.streams.default_stream_path`)."""
STREAM_RETENTION_ENV = "DURABLE_AGENTS_STREAM_RETENTION_SECONDS"
DEFAULT_STREAM_RETENTION_SECONDS = 3600
STREAM_HEARTBEAT_ENV = "DURABLE_AGENTS_STREAM_HEARTBEAT_SECONDS"
DEFAULT_HEARTBEAT_SECONDS = 15.0
INSTANCE_ENV = "WEBSITE_INSTANCE_ID"
"""Set by Azure on every instance of an app: the app may run on several instances at once."""
HOST_DATA_ENV = "DEVHOST_DATA_DIR"
"""Set by the local host (python -m devhost) for its workers: its data directory."""

# hosting.archive
HISTORY_STORE_ENV = "DURABLE_AGENTS_HISTORY_STORE"
HISTORY_CONNECTION_ENV = "DURABLE_AGENTS_HISTORY_CONNECTION"
HISTORY_CONTAINER_ENV = "DURABLE_AGENTS_HISTORY_CONTAINER"
HISTORY_DIR_ENV = "DURABLE_AGENTS_HISTORY_DIR"
ARCHIVE_AT_ENV = "DURABLE_AGENTS_ARCHIVE_AT_BYTES"
ARCHIVE_KEEP_ENV = "DURABLE_AGENTS_ARCHIVE_KEEP_BYTES"
DEFAULT_HISTORY_CONNECTION = "AzureWebJobsStorage"
DEFAULT_HISTORY_DIR = ".agent-history"
DEFAULT_ARCHIVE_AT_BYTES = ArchivePolicy().max_state_bytes
"""40 KiB: with the runs index, archived runs and chunk references a state stays under 64 KiB
plus its latest turn."""
DEFAULT_KEEP_BYTES = ArchivePolicy().keep_bytes
MAX_POLICY_BYTES = 64 * 1024 * 1024
"""The largest size either setting takes (a state over it would not load in time for a turn)."""

# hosting.mcp
MCP_TOOLS_ENV = "DURABLE_AGENTS_MCP_TOOLS"
"""App setting choosing the agents exposed as MCP tools: `all`, `none`, or agent names
separated by commas. When set it overrides `build_app(..., mcp_tools=...)`."""
MCP_WAIT_ENV = "DURABLE_AGENTS_MCP_WAIT_SECONDS"
"""App setting: how long an MCP tool call waits for its turn (default 200 s, at most 220 s)."""
FRONT_END_LIMIT_SECONDS = 230.0
"""How long Azure's front end (its load balancer) keeps an unanswered HTTP request open, whatever
the app's functionTimeout: a tool call is an HTTP request to the MCP extension's webhook."""
DEFAULT_MCP_WAIT_SECONDS = 200.0
# The wait is only part of the call: the session read, the signal and the answer come on top, and
# a cold instance adds its start. 30 s of margin keeps the answer (a turn still running is
# answered as such, with its session and run ids) inside the front end's 230 s.
MIN_MCP_WAIT_SECONDS = 0.1
MAX_MCP_WAIT_SECONDS = 220.0
"""The longest wait that still leaves 10 s before the front end gives up on the request: a longer
one would end in the front end's 504 with no session or run id, so it does not start."""

# hosting.webhooks
WEBHOOK_HOSTS_ENV = "DURABLE_AGENTS_WEBHOOK_HOSTS"
WEBHOOK_SECRET_ENV = "DURABLE_AGENTS_WEBHOOK_SECRET"
WEBHOOK_ATTEMPTS_ENV = "DURABLE_AGENTS_WEBHOOK_ATTEMPTS"
WEBHOOK_FIRST_RETRY_ENV = "DURABLE_AGENTS_WEBHOOK_FIRST_RETRY_SECONDS"
WEBHOOK_MAX_RETRY_ENV = "DURABLE_AGENTS_WEBHOOK_MAX_RETRY_SECONDS"
WEBHOOK_TIMEOUT_ENV = "DURABLE_AGENTS_WEBHOOK_TIMEOUT_SECONDS"
WEBHOOK_POLL_ENV = "DURABLE_AGENTS_WEBHOOK_POLL_SECONDS"

# hosting.lifecycle
TTL_ENV = "DURABLE_AGENTS_SESSION_TTL"
DEFAULT_TTL = timedelta(days=30)
MAX_TTL_SECONDS = 100 * 365 * 86_400
"""A century: an expiry time stays a date (a TTL past year 9999 broke every read of the session)."""
APPROVAL_TIMEOUT_SETTING = "DURABLE_AGENTS_APPROVAL_TIMEOUT_SECONDS"
DEFAULT_APPROVAL_TIMEOUT_SECONDS = 86400.0
"""A day: long enough for a person to answer, short enough that a forgotten turn ends."""
MAX_APPROVAL_TIMEOUT_SECONDS = 30 * 86400.0

# hosting.entity
TURN_DEADLINE_ENV = "DURABLE_AGENTS_TURN_DEADLINE_SECONDS"
DEFAULT_TURN_DEADLINE_SECONDS = 180.0
MIN_TURN_DEADLINE_SECONDS = 1.0
MAX_TURN_DEADLINE_SECONDS = 3600.0
FUNCTION_TIMEOUT_ENV = "AzureFunctionsJobHost__functionTimeout"
"""The app setting that overrides host.json's functionTimeout (the Functions host's configuration)."""

# hosting.http
AUTH_ENABLED_SETTING = "WEBSITE_AUTH_ENABLED"
"""Set to `True` by App Service when its authentication (Easy Auth) is on."""
INIT_INDEXING_SETTING = "PYTHON_ENABLE_INIT_INDEXING"


@dataclass(frozen=True)
class ApiSettings:
    """Limits of the HTTP API and of a session's stored state (all documented in docs/hosting.md)."""

    route_prefix: str = "api"
    max_body_bytes: int = MAX_BODY_BYTES
    response_wait_seconds: float = 30.0
    """How long `POST .../run` waits for the turn before answering 202."""
    max_poll_wait_seconds: float = 60.0
    """Upper bound of `?wait=` on the run resource."""
    health_timeout_seconds: float = 5.0
    public_base_url: str | None = field(default_factory=lambda: _public_origin_from_env())
    """Origin of the URLs the API hands out (`Location`, run links): `DURABLE_AGENTS_PUBLIC_BASE_URL`,
    else from `WEBSITE_HOSTNAME` (set by Azure, func start and the local host); None gives
    relative URLs. Never taken from a request's Host header."""
    max_session_bytes: int = field(default_factory=lambda: HttpSettings.read_one("max_session_bytes"))
    """Largest stored session state (UTF-8 bytes) a turn may leave; a turn that would exceed it is
    recorded as failed (`session_too_large`). Default 960 KiB or `DURABLE_AGENTS_MAX_SESSION_BYTES`."""

    def url(self, path: str) -> str:
        """The public URL of an API path (``agents/a/sessions/s``), for Location headers and links.

        Never built from a request's Host header: a caller must not choose where it points.
        """
        prefix = f"/{self.route_prefix}" if self.route_prefix else ""
        return f"{self.public_base_url or ''}{prefix}/{path}"

    def __post_init__(self) -> None:
        if isinstance(self.max_session_bytes, bool) or not isinstance(self.max_session_bytes, int):
            raise HostingConfigurationError("ApiSettings.max_session_bytes must be an int")
        if self.max_session_bytes < MIN_SESSION_BYTES:
            raise HostingConfigurationError(
                f"ApiSettings.max_session_bytes must be at least {MIN_SESSION_BYTES}, "
                f"not {self.max_session_bytes}"
            )


def _public_origin_from_env() -> str | None:
    read = HttpSettings.read_one
    return HttpSettings(public_base_url=read("public_base_url"), hostname=read("hostname")).public_origin


class HttpSettings(Section):
    """The HTTP API's settings (`ApiSettings` is made from them) and who a caller is."""

    max_session_bytes: Annotated[
        int, Bounds(MIN_SESSION_BYTES, MAX_SESSION_LIMIT_BYTES, "bytes", whole=True)
    ] = _setting(SESSION_LIMIT_ENV, DEFAULT_MAX_SESSION_BYTES)
    public_base_url: Annotated[str | None, TEXT] = _setting(PUBLIC_BASE_URL_ENV)
    hostname: Annotated[str | None, TEXT] = _setting(HOSTNAME_ENV)
    auth_enabled: Annotated[str | None, TEXT] = _setting(AUTH_ENABLED_SETTING)
    """`WEBSITE_AUTH_ENABLED`, which App Service sets to `True` when Easy Auth is on."""
    init_indexing: str | None = _setting(INIT_INDEXING_SETTING)
    """`PYTHON_ENABLE_INIT_INDEXING` as set (hosting.http checks it: the worker reads it too)."""

    @property
    def easy_auth(self) -> bool:
        """Whether App Service Authentication is on for this app (hosting.http._users)."""
        return (self.auth_enabled or "").lower() == "true"

    @property
    def public_origin(self) -> str | None:
        """The app's public origin (see `ApiSettings.public_base_url`)."""
        if self.public_base_url and self.public_base_url.rstrip("/"):
            return self.public_base_url.rstrip("/")
        if not self.hostname:
            return None
        local = self.hostname.split(":", 1)[0] in ("localhost", "127.0.0.1", "[::1]", "0.0.0.0")
        return f"{'http' if local else 'https'}://{self.hostname}"


class StreamSettings(Section):
    """The run stream store's settings (docs/streaming.md; hosting.streams)."""

    redis: Annotated[str | None, TEXT] = _setting(STREAM_REDIS_ENV)
    redis_entra: Annotated[bool, FLAG] = _setting(STREAM_REDIS_ENTRA_ENV, False)
    redis_cluster: Annotated[bool, FLAG] = _setting(STREAM_REDIS_CLUSTER_ENV, False)
    path: Annotated[str | None, TEXT] = _setting(STREAM_PATH_ENV)
    instance_id: Annotated[str | None, TEXT] = _setting(INSTANCE_ENV)
    host_data_dir: Annotated[str | None, TEXT] = _setting(HOST_DATA_ENV)
    site_name: Annotated[str | None, TEXT] = _setting(SITE_ENV)
    retention_seconds: Annotated[float, Bounds(1, 30 * 86_400, "seconds")] = _setting(
        STREAM_RETENTION_ENV, DEFAULT_STREAM_RETENTION_SECONDS
    )
    heartbeat_seconds: Annotated[float, Bounds(0.05, 300, "seconds")] = _setting(
        STREAM_HEARTBEAT_ENV, DEFAULT_HEARTBEAT_SECONDS
    )


class ArchiveSettings(Section):
    """Where archived history goes and when a session is archived (hosting.archive)."""

    store: Annotated[str | None, TEXT] = _setting(HISTORY_STORE_ENV)
    connection: Annotated[str, TEXT] = _setting(HISTORY_CONNECTION_ENV, DEFAULT_HISTORY_CONNECTION)
    container: Annotated[str | None, TEXT] = _setting(HISTORY_CONTAINER_ENV)
    dir: Annotated[str, TEXT] = _setting(HISTORY_DIR_ENV, DEFAULT_HISTORY_DIR)
    archive_at_bytes: Annotated[int, Bounds(1024, MAX_POLICY_BYTES, "bytes", whole=True)] = _setting(
        ARCHIVE_AT_ENV, DEFAULT_ARCHIVE_AT_BYTES
    )
    keep_bytes: Annotated[int, Bounds(1024, MAX_POLICY_BYTES, "bytes", whole=True)] = _setting(
        ARCHIVE_KEEP_ENV, DEFAULT_KEEP_BYTES
    )
    connection_settings: dict[str, str] = Field(default_factory=dict)
    """The storage connection's own settings (`<connection>` and `<connection>__*`), as read at
    startup: the connection is named by a setting, so its settings are known only then."""

    @field_validator("store")
    @classmethod
    def _store_kind(cls, value: str | None) -> str | None:
        kind = (value or "").lower()
        if kind not in ("", "files", "azure"):
            raise HostingConfigurationError(f"{HISTORY_STORE_ENV} must be 'files' or 'azure', not {kind!r}")
        return kind or None


class McpSettings(Section):
    """Which agents are MCP tools and how long a tool call waits (hosting.mcp; docs/mcp.md)."""

    tools: str | None = _setting(MCP_TOOLS_ENV)
    """As set: set at all, even empty, it overrides `build_app(..., mcp_tools=...)`."""
    wait_seconds: float = _setting(MCP_WAIT_ENV, DEFAULT_MCP_WAIT_SECONDS)

    @field_validator("wait_seconds", mode="before")
    @classmethod
    def _wait(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        env = {MCP_WAIT_ENV: value}
        try:
            found = number_setting(
                env, MCP_WAIT_ENV, low=MIN_MCP_WAIT_SECONDS, high=MAX_MCP_WAIT_SECONDS, unit="seconds"
            )
        except HostingConfigurationError as error:
            if _longer_than_allowed(value.strip()):
                raise HostingConfigurationError(
                    f"{error}: Azure's front end ends an HTTP request unanswered after "
                    f"{FRONT_END_LIMIT_SECONDS:g} s, so a tool call must have its answer (or its run ids) "
                    f"before then"
                ) from None
            raise
        return DEFAULT_MCP_WAIT_SECONDS if found is None else found


def _longer_than_allowed(raw: str) -> bool:
    try:
        value = float(raw)
    except ValueError:
        return False
    return math.isfinite(value) and value > MAX_MCP_WAIT_SECONDS


class WebhookSettings(Section):
    """The webhooks' allowlist, signing secret and delivery pace (hosting.webhooks)."""

    hosts: Annotated[str | None, TEXT] = _setting(WEBHOOK_HOSTS_ENV)
    secret: SecretStr | None = _setting(WEBHOOK_SECRET_ENV)
    attempts: Annotated[int, Bounds(1, 50, "attempts", whole=True)] = _setting(WEBHOOK_ATTEMPTS_ENV, 8)
    first_retry: Annotated[float, Bounds(0.1, 3600, "seconds")] = _setting(WEBHOOK_FIRST_RETRY_ENV, 5.0)
    max_retry: Annotated[float, Bounds(0.1, 86400, "seconds")] = _setting(WEBHOOK_MAX_RETRY_ENV, 3600.0)
    timeout: Annotated[float, Bounds(0.5, 120, "seconds")] = _setting(WEBHOOK_TIMEOUT_ENV, 10.0)
    poll: Annotated[float, Bounds(0.1, 60, "seconds")] = _setting(WEBHOOK_POLL_ENV, 1.0)

    @field_validator("secret", mode="before")
    @classmethod
    def _secret(cls, value: Any) -> Any:
        # Kept as set (a secret's spaces are its own), but a blank one is none.
        return None if isinstance(value, str) and not value.strip() else value

    @property
    def enabled(self) -> bool:
        """Whether the app delivers webhooks at all (both the allowlist and the secret set)."""
        return bool(self.hosts and self.secret is not None)

    @property
    def secret_bytes(self) -> bytes | None:
        """The signing secret (UTF-8), or None when unset."""
        return None if self.secret is None else self.secret.get_secret_value().encode()


class LifecycleSettings(Section):
    """Idle expiry of sessions and the time a tool approval waits (hosting.lifecycle)."""

    session_ttl: Annotated[float | None, Bounds(0, MAX_TTL_SECONDS, "seconds (0: never expire)")] = (
        _setting(TTL_ENV)
    )
    agent_ttls: dict[str, float] = Field(default_factory=dict)
    """`DURABLE_AGENTS_SESSION_TTL__<agent>`, by agent name."""
    approval_timeout: Annotated[float, Bounds(1, MAX_APPROVAL_TIMEOUT_SECONDS, "seconds")] = _setting(
        APPROVAL_TIMEOUT_SETTING, DEFAULT_APPROVAL_TIMEOUT_SECONDS
    )

    @field_validator("agent_ttls", mode="before")
    @classmethod
    def _agent_ttls(cls, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        found: dict[str, float] = {}
        for agent, raw in value.items():
            name = f"{TTL_ENV}__{agent}"
            if not isinstance(raw, str):
                found[agent] = raw
                continue
            seconds = number_setting(
                {name: raw}, name, low=0, high=MAX_TTL_SECONDS, unit="seconds (0: never expire)"
            )
            if seconds is not None:
                found[agent] = seconds
        return found

    def ttl_for(self, agent: str) -> timedelta | None:
        """How long `agent`'s sessions may stay idle (None: forever): its own setting, else the
        app's, else 30 days."""
        seconds = self.agent_ttls.get(agent, self.session_ttl)
        if seconds is None:
            return DEFAULT_TTL
        return None if seconds == 0 else timedelta(seconds=seconds)


class LimitsSettings(Section):
    """The time limits of a turn (hosting.entity `TimeLimits`)."""

    turn_deadline: Annotated[
        float, Bounds(MIN_TURN_DEADLINE_SECONDS, MAX_TURN_DEADLINE_SECONDS, "seconds")
    ] = _setting(TURN_DEADLINE_ENV, DEFAULT_TURN_DEADLINE_SECONDS)
    function_timeout: Annotated[str | None, TEXT] = _setting(FUNCTION_TIMEOUT_ENV)
    """The app setting overriding host.json's functionTimeout, as set (hosting.entity reads it)."""


SECTIONS: tuple[str, ...] = ("http", "streams", "archive", "mcp", "webhooks", "lifecycle", "limits")


class HostingSettings(BaseSettings):
    """Every app setting hosting reads, read once (`load`) and handed down in its sections."""

    model_config = SettingsConfigDict(frozen=True, extra="forbid")

    http: HttpSettings = Field(default_factory=HttpSettings)
    streams: StreamSettings = Field(default_factory=StreamSettings)
    archive: ArchiveSettings = Field(default_factory=ArchiveSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    webhooks: WebhookSettings = Field(default_factory=WebhookSettings)
    lifecycle: LifecycleSettings = Field(default_factory=LifecycleSettings)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    task_hub: str = LOCAL_HUB
    """The app's Durable task hub as the extension resolves it (hosting._hub)."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # App settings reach a function app as environment variables under their own flat
        # names (no prefix, no nesting, no .env file): `_AppSettings` reads exactly those.
        return (init_settings, _AppSettings(settings_cls))

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None, **given: Any) -> HostingSettings:
        """The settings from `environ` (default: the environment; `given`: sections set in code
        instead). Raises `HostingConfigurationError` naming the first setting that is unusable."""
        token = _environ.set(environ)
        try:
            return cls(**given)
        except ValidationError as error:
            raise _refusal(error) from None
        finally:
            _environ.reset(token)

    def api(self) -> ApiSettings:
        """The HTTP API's settings from these."""
        http = self.http
        return ApiSettings(public_base_url=http.public_origin, max_session_bytes=http.max_session_bytes)


def _refusal(error: ValidationError) -> HostingConfigurationError:
    first = error.errors()[0]
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, HostingConfigurationError):
        return cause
    where = str(first["loc"][-1]) if first["loc"] else "a setting"
    return HostingConfigurationError(f"{where}: {first['msg']} (not {first.get('input')!r})")


def read_environ(settings_cls: type[BaseSettings], env: Mapping[str, str]) -> dict[str, Any]:
    """The settings' values as set in `env`, by section and setting name (blank ones too: each
    field says what blank means)."""
    values: dict[str, Any] = {}
    for name, spec in settings_cls.model_fields.items():
        section = spec.annotation
        if isinstance(section, type) and issubclass(section, Section):
            aliases = (str(f.validation_alias) for f in section.model_fields.values() if f.validation_alias)
            values[name] = {alias: env[alias] for alias in aliases if alias in env} | _named(section, env)
    values["task_hub"] = task_hub(env)
    return values


def _named(section: type[Section], env: Mapping[str, str]) -> dict[str, Any]:
    """A section's settings whose names are known only from other settings or the agents."""
    if section is LifecycleSettings:
        prefix = f"{TTL_ENV}__"
        return {"agent_ttls": {k[len(prefix) :]: v for k, v in env.items() if k.startswith(prefix)}}
    if section is ArchiveSettings:
        connection = env.get(HISTORY_CONNECTION_ENV, "").strip() or DEFAULT_HISTORY_CONNECTION
        own = {k: v for k, v in env.items() if k == connection or k.startswith(f"{connection}__")}
        return {"connection_settings": own}
    return {}


_environ: ContextVar[Mapping[str, str] | None] = ContextVar("hosting_settings_environ", default=None)
"""The settings `HostingSettings.load` was given in place of the environment (tests, tools)."""


class _AppSettings(PydanticBaseSettingsSource):
    """The process environment, where the Functions host puts the app settings."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # every value comes from __call__

    def __call__(self) -> dict[str, Any]:
        given = _environ.get()
        return read_environ(self.settings_cls, os.environ if given is None else given)


_installed: HostingSettings | None = None


def use_settings(settings: HostingSettings | None) -> None:
    """Make `settings` the app's (`build_app` does, once it has read them; None: none again)."""
    global _installed
    _installed = settings


def current() -> HostingSettings:
    """The settings `build_app` read, for what reads one per request without a caller to hand it
    down (the users' principal, the webhook checks); a part used without `build_app` (a test,
    a script) reads the environment instead, each time."""
    return HostingSettings.load() if _installed is None else _installed
