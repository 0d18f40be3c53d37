"""Project files the Functions host reads at startup: host.json and local.settings.json."""

from __future__ import annotations

import json
import logging
import os
import pathlib
import re
from dataclasses import dataclass
from typing import Any

from ._errors import DevHostError

DEFAULT_ROUTE_PREFIX = "api"
# Flex Consumption's functionTimeout when host.json sets none (30 minutes; it may be unbounded).
DEFAULT_FUNCTION_TIMEOUT = 30 * 60.0
# `func start` uses this hub name when host.json names none.
DEFAULT_TASK_HUB = "TestHubName"


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
        if not path.is_file():
            return cls()
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
        hub = durable.get("hubName") or DEFAULT_TASK_HUB
        if not isinstance(prefix, str) or not isinstance(hub, str):
            raise DevHostError(f"{path}: routePrefix and hubName must be strings")
        # hubName may be an app-setting expression like %MyTaskHub%.
        if hub.startswith("%") and hub.endswith("%") and len(hub) > 2:
            hub = os.environ.get(hub[1:-1], DEFAULT_TASK_HUB)
        entities = _positive(durable, "maxConcurrentEntityFunctions", path)
        activities = _positive(durable, "maxConcurrentActivityFunctions", path)
        orchestrators = _positive(durable, "maxConcurrentOrchestratorFunctions", path)
        provider = _obj(durable.get("storageProvider")).get("type") or "AzureStorage"
        if not isinstance(provider, str):
            raise DevHostError(f"{path}: storageProvider.type must be a string")
        timeout = _function_timeout(data.get("functionTimeout"), path)
        mcp = _obj(extensions.get("mcp"))
        instructions = mcp.get("instructions")
        level = _obj(mcp.get("system")).get("webhookAuthorizationLevel")
        return cls(route_prefix=prefix.strip("/"), task_hub=hub,
                   max_concurrent_entity_functions=entities,
                   max_concurrent_activity_functions=activities,
                   max_concurrent_orchestrator_functions=orchestrators,
                   storage_provider=provider.lower(),
                   function_timeout=timeout,
                   mcp_instructions=instructions if isinstance(instructions, str) else None,
                   mcp_anonymous=isinstance(level, str) and level.lower() == "anonymous")


def _function_timeout(value: Any, path: pathlib.Path) -> float | None:
    """``functionTimeout``: a TimeSpan ``[d.]hh:mm:ss[.fff]``, or ``-1`` for no limit."""
    if value is None:
        return DEFAULT_FUNCTION_TIMEOUT
    if value in (-1, "-1"):
        return None
    match = re.fullmatch(r"(?:(\d+)\.)?(\d{1,2}):(\d{2}):(\d{2}(?:\.\d+)?)", str(value).strip())
    if match is None or int(match.group(3)) >= 60 or float(match.group(4)) >= 60:
        raise DevHostError(f"{path}: functionTimeout must be a time span like 00:10:00 or -1, not {value!r}")
    days, hours, minutes, seconds = match.groups()
    total = int(days or 0) * 86400 + int(hours) * 3600 + int(minutes) * 60 + float(seconds)
    if total <= 0:
        raise DevHostError(f"{path}: functionTimeout must be longer than zero")
    return total


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
