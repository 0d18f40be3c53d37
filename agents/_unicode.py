"""Text that UTF-8 cannot carry: lone UTF-16 surrogates, which JSON's \\uXXXX escapes can produce.

A model service (or a tool) may answer ``"\\ud800"``: valid JSON, but no UTF-8 encoder, HTTP
body or durable store downstream accepts the resulting string. What came from a model or a tool
is repaired here, once, before it is recorded: each lone surrogate becomes U+FFFD, the Unicode
replacement character, so the stored turn shows where text was lost. (Callers are refused
instead, at the HTTP edge: their text is theirs to fix.)
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

log = logging.getLogger("agents")


def _repair_text(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Through UTF-16 with surrogatepass, a high+low pair becomes its character again and a
        # lone half decodes as U+FFFD.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def _repair(value: Any) -> Any:
    if isinstance(value, str):
        return _repair_text(value)
    if isinstance(value, dict):
        return {_repair_text(k) if isinstance(k, str) else k: _repair(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_repair(v) for v in value]
    return value


def without_lone_surrogates(value: Any, what: str) -> Any:
    """``value`` (JSON-like) with every lone surrogate replaced by U+FFFD; logged when it happens.

    The common case costs one orjson encode: orjson refuses surrogates, so success means there
    is nothing to repair.
    """
    try:
        orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        repaired = _repair(value)
        if repaired != value:
            log.warning("replaced lone UTF-16 surrogates in %s with U+FFFD", what)
        return repaired
    return value
