"""The app's Durable task hub as the Functions host and the Durable extension resolve it, and the
per-app names derived from it: the history archive's blob container and long-term memory's table.

The extension takes ``extensions.durableTask.hubName`` from the host's configuration: host.json,
overridden by the app setting ``AzureFunctionsJobHost__extensions__durableTask__hubName``; a
``%SETTING%`` value is read from that app setting (``DurableTaskOptions.ResolveAppSettingOptions``,
the name resolver's whole-string form). Without one, the hub is the app's ``WEBSITE_SITE_NAME``
(``TestHubName`` off Azure), which the Azure Storage provider sanitises
(``AzureStorageOptions.IsSanitizedHubName``: letters and digits only, a leading digit gets a
``t``, at most 45 characters, ``Hub`` appended below 3). See docs/hosting.md "Deployment notes".
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

SITE_ENV = "WEBSITE_SITE_NAME"
"""Set by Azure: the app's name."""
HUB_OVERRIDE_ENV = "AzureFunctionsJobHost__extensions__durableTask__hubName"
"""The app setting that overrides host.json's hubName (the Functions host's configuration)."""
SCRIPT_ROOT_ENV = "AzureWebJobsScriptRoot"
"""Set by the Functions host: the app's folder (host.json, function_app.py)."""
LOCAL_HUB = "TestHubName"
"""The extension's hub name when neither a hubName nor WEBSITE_SITE_NAME is there."""
MAX_HUB = 45
MIN_HUB = 3
CONTAINER_SUFFIX = "-history"
MAX_CONTAINER = 63
MEMORY_TABLE_SUFFIX = "Memory"
MAX_TABLE = 63


def app_root() -> Path:
    """The app's folder: the Functions host's script root (``AzureWebJobsScriptRoot``), else the
    working directory (where the Functions host and the local host start the worker)."""
    # Not an app setting: the Functions host sets it for its worker process, as it sets the
    # working directory, and the app's files (host.json) are where it says whatever the settings.
    return Path(os.environ.get(SCRIPT_ROOT_ENV, "").strip() or os.getcwd())


def sanitized_hub(name: str) -> str:
    """A default hub name as the Azure Storage provider makes it valid."""
    kept = "".join(c for c in name if c.isalnum())
    if not kept:
        return "DefaultTaskHub"
    if kept[0].isdigit():
        kept = "t" + kept
    kept = kept[:MAX_HUB]
    return kept + "Hub" if len(kept) < MIN_HUB else kept


def _configured_hub(env: Mapping[str, str]) -> str | None:
    hub: object = env.get(HUB_OVERRIDE_ENV, "").strip() or None
    if hub is None:
        try:
            document = json.loads((app_root() / "host.json").read_text(encoding="utf-8"))
            hub = document.get("extensions", {}).get("durableTask", {}).get("hubName")
        except (OSError, ValueError, AttributeError):
            return None
    if not isinstance(hub, str) or not hub.strip():
        return None
    if len(hub) > 2 and hub.startswith("%") and hub.endswith("%"):
        return env.get(hub[1:-1], "").strip() or hub  # unresolved: the extension refuses it
    return hub


def task_hub(env: Mapping[str, str]) -> str:
    """The app's task hub: the configured one, else the extension's default for this app (`env`:
    the app settings; `HostingSettings.task_hub` holds it as read at startup)."""
    configured = _configured_hub(env)
    if configured is not None:
        return configured
    site = env.get(SITE_ENV, "").strip()
    return sanitized_hub(site) if site else LOCAL_HUB


def history_container(hub: str) -> str:
    """A blob container name (3 to 63 lower-case letters, digits and single hyphens, starting and
    ending with a letter or digit) for the archive of the task hub `hub`: ``<hub>-history``."""
    stem = re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", hub.lower())).strip("-")
    stem = stem[: MAX_CONTAINER - len(CONTAINER_SUFFIX)].rstrip("-")
    return (stem or "agent") + CONTAINER_SUFFIX


def memory_table(hub: str) -> str:
    """A Table Storage table name (3 to 63 letters and digits, starting with a letter) for the
    long-term memory of the task hub `hub`: ``<hub>Memory``, beside the Azure Storage provider's
    ``<hub>Instances`` and ``<hub>History``."""
    stem = "".join(c for c in hub if c.isascii() and c.isalnum())
    if stem and not stem[0].isalpha():
        stem = "t" + stem
    return (stem or "agents")[: MAX_TABLE - len(MEMORY_TABLE_SUFFIX)] + MEMORY_TABLE_SUFFIX
