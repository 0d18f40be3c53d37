"""The startup hook: a ``module:function`` the app's project names, called before the app is imported.

devhost knows only the Functions and Durable protocols; whatever else a project needs before its
app is imported (``make run`` starts the offline model server when no model is configured) comes
from a hook the project names with ``--startup-hook`` or ``DEVHOST_STARTUP_HOOK`` (an environment
variable, so ``local.settings.json`` Values can set it too). The hook takes no arguments; whatever
it returns is kept, and its ``stop()``, if it has one, is called when the host stops.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from ._errors import DevHostError

STARTUP_HOOK_ENV = "DEVHOST_STARTUP_HOOK"


def run_startup_hook(spec: str | None, logger: logging.Logger) -> Any | None:
    """Call the hook ``spec`` (``module:function``) names; None when no hook is named."""
    if not spec:
        return None
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise DevHostError(f"startup hook {spec!r} is not of the form module:function")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise DevHostError(f"cannot import startup hook module {module_name!r}: {exc!r}") from exc
    hook = getattr(module, attr, None)
    if not callable(hook):
        raise DevHostError(f"startup hook {spec!r} names nothing callable")
    logger.debug("running startup hook %s", spec)
    return hook()


def stop_startup_hook(result: Any | None) -> None:
    """Call ``stop()`` on what the hook returned, if it has one."""
    stop = getattr(result, "stop", None) if result is not None else None
    if callable(stop):
        stop()
