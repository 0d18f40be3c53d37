"""Project files the Functions host reads at startup: host.json and local.settings.json."""

from __future__ import annotations

import json
import logging
import os
import pathlib
import re
import sys
from dataclasses import dataclass
from typing import Any

from ._errors import DevHostError

KEY_ENV = "DEVHOST_FUNCTION_KEY"
"""The one function key the host requires when set (docs/devhost.md)."""
MAX_STATE_ENV = "DEVHOST_MAX_STATE_BYTES"
# The Durable Task Scheduler's message limit, which Python apps cannot lift with its blob
# offload: a state that passes here also fits there (see docs/devhost.md, "Entity state size").
DEFAULT_MAX_STATE_BYTES = 1024 * 1024
DEFAULT_ROUTE_PREFIX = "api"
# Flex Consumption's functionTimeout when host.json sets none (30 minutes; it may be unbounded).
DEFAULT_FUNCTION_TIMEOUT = 30 * 60.0
# The Durable extension's hub name when host.json names none and WEBSITE_SITE_NAME is unset.
DEFAULT_TASK_HUB = "TestHubName"
HUB_OVERRIDE_ENV = "AzureFunctionsJobHost__extensions__durableTask__hubName"
"""The app setting that overrides host.json's hubName, as the Functions host's configuration does."""
SITE_ENV = "WEBSITE_SITE_NAME"
SLOT_ENV = "WEBSITE_SLOT_NAME"
FUNCTION_TIMEOUT_ENV = "AzureFunctionsJobHost__functionTimeout"
"""The app setting that overrides host.json's functionTimeout (the Functions host's configuration)."""
# The Durable extension's maxEntityOperationBatchSize when host.json sets none:
# AzureStorageDurabilityProviderFactory takes 50 where DefaultPlatformInformation.IsInConsumptionPlan
# holds (CONTAINER_NAME without WEBSITE_INSTANCE_ID, or WEBSITE_SKU=Dynamic), 5000 elsewhere. Which
# one a Flex Consumption instance gets the source does not say; the local host takes the smaller.
DEFAULT_MAX_ENTITY_OPERATION_BATCH_SIZE = 50
DURABLE_OVERRIDE_PREFIX = "AzureFunctionsJobHost__extensions__durableTask__"
"""App settings named so override host.json's ``extensions.durableTask`` values, as the Functions
host's configuration does for any host.json path ("Override host.json values" in the Functions
docs; the host binds them case-insensitively)."""
_OVERRIDABLE = (
    "maxConcurrentEntityFunctions",
    "maxConcurrentActivityFunctions",
    "maxConcurrentOrchestratorFunctions",
    "maxEntityOperationBatchSize",
)
# DTFx's Azure Storage provider polls an idle control queue less and less often, up to this.
DEFAULT_MAX_QUEUE_POLLING_INTERVAL = 30.0


@dataclass(frozen=True)
class HostSettings:
    """The parts of host.json the local host honours."""

    route_prefix: str = DEFAULT_ROUTE_PREFIX
    task_hub: str = DEFAULT_TASK_HUB
    max_concurrent_entity_functions: int | None = None
    """``durableTask.maxConcurrentEntityFunctions``; None: the extension's default."""
    max_concurrent_orchestrator_functions: int | None = None
    """``durableTask.maxConcurrentOrchestratorFunctions``; None: the extension's default."""
    storage_provider: str = "azurestorage"
    """``durableTask.storageProvider.type``, lower case (Azure Storage when absent)."""
    max_concurrent_activity_functions: int | None = None
    """``durableTask.maxConcurrentActivityFunctions``; None: the extension's default (10 per core)."""
    function_timeout: float | None = DEFAULT_FUNCTION_TIMEOUT
    """``functionTimeout`` in seconds (None: unbounded, ``-1``); Flex Consumption's default when absent."""
    max_entity_operation_batch_size: int = DEFAULT_MAX_ENTITY_OPERATION_BATCH_SIZE
    """``durableTask.maxEntityOperationBatchSize``: the most queued operations of one entity run
    as one batch (the extension's consumption-plan default, 50, when absent)."""
    max_queue_polling_interval: float = DEFAULT_MAX_QUEUE_POLLING_INTERVAL
    """``durableTask.storageProvider.maxQueuePollingInterval`` in seconds (checked as the extension
    does; the local host delivers messages at once, see docs/devhost.md)."""
    mcp_instructions: str | None = None  # extensions.mcp.instructions, sent to MCP clients
    mcp_anonymous: bool = False  # extensions.mcp.system.webhookAuthorizationLevel == "Anonymous"

    @property
    def entity_batches_at_once(self) -> int:
        """How many entity batches run at once on one instance.

        On the Azure Storage backend the Durable extension runs an entity of an out-of-process
        app (Python's) as an orchestration work item, so ``maxConcurrentOrchestratorFunctions``
        caps its batches; on the other backends ``maxConcurrentEntityFunctions`` does. Either
        defaults to 10 per core, as the extension's default for a dedicated plan.
        """
        configured = (self.max_concurrent_orchestrator_functions if self.storage_provider == "azurestorage"
                      else self.max_concurrent_entity_functions)
        return configured or 10 * (os.cpu_count() or 1)

    @classmethod
    def load(cls, project_dir: pathlib.Path) -> HostSettings:
        """Read ``host.json`` from ``project_dir``; defaults when absent."""
        path = project_dir / "host.json"
        override = os.environ.get(FUNCTION_TIMEOUT_ENV, "").strip() or None
        data: Any = {}
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise DevHostError(f"{path}: not valid JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise DevHostError(f"{path}: expected a JSON object")
        extensions = _obj(data.get("extensions"))
        http = _obj(extensions.get("http"))
        durable = _obj(extensions.get("durableTask"))
        prefix = http.get("routePrefix", DEFAULT_ROUTE_PREFIX)
        if not isinstance(prefix, str):
            raise DevHostError(f"{path}: routePrefix must be a string")
        durable = {**durable, **_durable_overrides()}
        storage = _obj(durable.get("storageProvider"))
        provider = storage.get("type") or "AzureStorage"
        if not isinstance(provider, str):
            raise DevHostError(f"{path}: storageProvider.type must be a string")
        hub = _task_hub(durable.get("hubName"), provider.lower(), path)
        polling = storage.get("maxQueuePollingInterval")
        max_polling = (DEFAULT_MAX_QUEUE_POLLING_INTERVAL if polling is None
                       else _time_span(polling, "storageProvider.maxQueuePollingInterval", path))
        entities = _positive(durable, "maxConcurrentEntityFunctions", path)
        activities = _positive(durable, "maxConcurrentActivityFunctions", path)
        orchestrators = _positive(durable, "maxConcurrentOrchestratorFunctions", path)
        batch_size = _positive(durable, "maxEntityOperationBatchSize", path)
        timeout = _function_timeout(override or data.get("functionTimeout"), path)
        mcp = _obj(extensions.get("mcp"))
        instructions = mcp.get("instructions")
        level = _obj(mcp.get("system")).get("webhookAuthorizationLevel")
        return cls(route_prefix=prefix.strip("/"), task_hub=hub,
                   max_concurrent_entity_functions=entities,
                   max_concurrent_activity_functions=activities,
                   max_concurrent_orchestrator_functions=orchestrators,
                   storage_provider=provider.lower(),
                   function_timeout=timeout,
                   max_entity_operation_batch_size=batch_size or DEFAULT_MAX_ENTITY_OPERATION_BATCH_SIZE,
                   max_queue_polling_interval=max_polling,
                   mcp_instructions=instructions if isinstance(instructions, str) else None,
                   mcp_anonymous=isinstance(level, str) and level.lower() == "anonymous")


def _function_timeout(value: Any, path: pathlib.Path) -> float | None:
    """``functionTimeout``: a TimeSpan ``[d.]hh:mm:ss[.fff]``, or ``-1`` for no limit."""
    if value is None:
        return DEFAULT_FUNCTION_TIMEOUT
    if value in (-1, "-1"):
        return None
    return _time_span(value, "functionTimeout", path, " or -1")


def _time_span(value: Any, name: str, path: pathlib.Path, other: str = "") -> float:
    """A positive TimeSpan ``[d.]hh:mm:ss[.fff]`` in seconds."""
    match = re.fullmatch(r"(?:(\d+)\.)?(\d{1,2}):(\d{2}):(\d{2}(?:\.\d+)?)", str(value).strip())
    if match is None or int(match.group(3)) >= 60 or float(match.group(4)) >= 60:
        raise DevHostError(f"{path}: {name} must be a time span like 00:10:00{other}, not {value!r}")
    days, hours, minutes, seconds = match.groups()
    total = int(days or 0) * 86400 + int(hours) * 3600 + int(minutes) * 60 + float(seconds)
    if total <= 0:
        raise DevHostError(f"{path}: {name} must be longer than zero")
    return total


def _task_hub(configured: Any, provider: str, path: pathlib.Path) -> str:
    """The task hub as the Durable extension resolves it: the app setting override, else
    host.json's hubName, a whole ``%SETTING%`` read from that setting (left as it is when the
    setting is missing, as the host's name resolver does); the Azure Storage provider refuses an
    invalid configured name and sanitises the default one (WEBSITE_SITE_NAME, else TestHubName)."""
    configured = os.environ.get(HUB_OVERRIDE_ENV, "").strip() or configured
    if configured is not None and not isinstance(configured, str):
        raise DevHostError(f"{path}: hubName must be a string")
    if not configured:
        slot = os.environ.get(SLOT_ENV)
        if slot is not None and slot.lower() != "production":
            # DurableTaskOptions.Validate: a slot that is not production needs a chosen hub.
            raise DevHostError(
                f"{path}: {SLOT_ENV} is {slot!r}: a deployment slot needs its own task hub name "
                f"(host.json hubName or {HUB_OVERRIDE_ENV}); the Durable extension does not start "
                "with the default one there"
            )
        site = os.environ.get(SITE_ENV, "").strip()
        if not site:
            return DEFAULT_TASK_HUB
        return sanitized_hub(site) if provider == "azurestorage" else site
    hub = configured
    if len(hub) > 2 and hub.startswith("%") and hub.endswith("%"):
        hub = os.environ.get(hub[1:-1]) or hub
    if provider == "azurestorage" and not re.fullmatch(r"[A-Za-z][A-Za-z0-9]{2,49}", hub):
        # AzureStorageOptions.ValidateHubName: a table, queue, container and blob name at once,
        # and at most 50 characters; the extension then does not start.
        raise DevHostError(
            f"{path}: task hub name {hub!r} must be letters and digits only, start with a letter and "
            "be 3 to 50 characters long (3 to 45 as documented): the Durable extension's Azure "
            "Storage provider refuses it and the host does not start"
        )
    return hub


def sanitized_hub(name: str) -> str:
    """The default hub name made valid as the Azure Storage provider does
    (``AzureStorageOptions.IsSanitizedHubName``)."""
    kept = "".join(c for c in name if c.isalnum())
    if not kept:
        return "DefaultTaskHub"
    if kept[0].isdigit():
        kept = "t" + kept
    kept = kept[:45]
    return kept + "Hub" if len(kept) < 3 else kept


def _durable_overrides() -> dict[str, int]:
    """The numbers of ``extensions.durableTask`` that app settings override (see
    ``DURABLE_OVERRIDE_PREFIX``); a value that is not a positive integer names its setting."""
    found: dict[str, int] = {}
    wanted = {f"{DURABLE_OVERRIDE_PREFIX}{name}".lower(): name for name in _OVERRIDABLE}
    for setting, value in os.environ.items():
        name = wanted.get(setting.lower())
        if name is None:
            continue
        text = value.strip()
        if not (text.isascii() and text.isdigit() and int(text) >= 1):
            raise DevHostError(f"app setting {setting}: must be a positive integer, not {value!r}")
        found[name] = int(text)
    return found


def _positive(section: dict[str, Any], name: str, path: pathlib.Path) -> int | None:
    value = section.get(name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise DevHostError(f"{path}: {name} must be a positive integer")
    return value


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def load_local_settings(project_dir: pathlib.Path, logger: logging.Logger) -> list[str]:
    """Copy ``local.settings.json`` ``Values`` into the environment without overriding it.

    Returns the names that were set, like ``func start`` does for the worker.
    """
    path = project_dir / "local.settings.json"
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError) as exc:
        raise DevHostError(f"{path}: not valid JSON ({exc})") from exc
    values = _obj(data.get("Values") if isinstance(data, dict) else None)
    applied = []
    for name, value in values.items():
        if name in os.environ or value is None:
            continue
        os.environ[name] = value if isinstance(value, str) else json.dumps(value)
        applied.append(name)
    if applied:
        logger.info("loaded %d setting(s) from %s", len(applied), path.name)
    return applied


def ensure_importable(project_dir: str) -> None:
    """Put the project directory first on sys.path, as the worker does for the app root."""
    if project_dir not in sys.path:
        sys.path.insert(0, project_dir)
