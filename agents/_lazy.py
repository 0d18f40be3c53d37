"""Names a package loads on first use (PEP 562): `agents` and `agents.testing` use it, so that
importing either costs only the modules a caller actually touches (docs/devhost.md "Command
line": the startup hook and the worker's start)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, where: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The package's module-level `__getattr__`: `where` maps each public name to the submodule
    (relative to `package`) that defines it; a name loaded once is kept in `namespace` (the
    package's globals), so later lookups never come back here."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    return __getattr__
