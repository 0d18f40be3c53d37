"""ASP.NET-style route templates as the Functions host matches them.

Supported: literal segments (case-insensitive), ``{name}``, ``{name?}`` optional,
``{*name}`` catch-all, ``{name=default}`` and the inline constraints the host accepts
(``int``, ``long``, ``bool``, ``guid``, ``alpha``, ``float``/``double``/``decimal``,
``datetime``, ``minlength(n)``, ``maxlength(n)``, ``length(n)``/``length(a,b)``, ``min(n)``,
``max(n)``, ``range(a,b)``, ``regex(expr)``).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import unquote

from .._errors import RouteTemplateError

_PARAM = re.compile(r"\{([^{}]*(?:\([^()]*\))?[^{}]*)\}")
_Check = Callable[[str], bool]


def _is_number(text: str, integral: bool) -> bool:
    try:
        int(text) if integral else float(text)
    except ValueError:
        return False
    return True


def _is_guid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def _is_datetime(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def _constraint(spec: str) -> _Check:
    name, _, arg = spec.partition("(")
    name = name.strip().lower()
    arg = arg[:-1] if arg.endswith(")") else arg
    args = [a.strip() for a in arg.split(",")] if arg else []
    simple: dict[str, _Check] = {
        "int": lambda v: _is_number(v, True),
        "long": lambda v: _is_number(v, True),
        "bool": lambda v: v.lower() in ("true", "false"),
        "guid": _is_guid,
        "alpha": lambda v: v.isascii() and v.isalpha(),
        "float": lambda v: _is_number(v, False),
        "double": lambda v: _is_number(v, False),
        "decimal": lambda v: _is_number(v, False),
        "datetime": _is_datetime,
    }
    try:
        if name in simple and not args:
            return simple[name]
        if name == "minlength":
            return lambda v: len(v) >= int(args[0])
        if name == "maxlength":
            return lambda v: len(v) <= int(args[0])
        if name == "length":
            lo, hi = (int(args[0]), int(args[-1]))
            return lambda v: lo <= len(v) <= hi
        if name == "min":
            return lambda v: _is_number(v, True) and int(v) >= int(args[0])
        if name == "max":
            return lambda v: _is_number(v, True) and int(v) <= int(args[0])
        if name == "range":
            return lambda v: _is_number(v, True) and int(args[0]) <= int(v) <= int(args[1])
        if name == "regex":
            pattern = re.compile(arg, re.IGNORECASE)
            return lambda v: pattern.search(v) is not None
    except (IndexError, ValueError, re.error) as exc:
        raise RouteTemplateError(f"bad route constraint {spec!r}: {exc}") from exc
    raise RouteTemplateError(f"unknown route constraint {spec!r}")


@dataclass
class RouteTemplate:
    """One compiled route template (without the host's route prefix)."""

    template: str
    regex: re.Pattern[str]
    checks: dict[str, list[_Check]] = field(default_factory=dict)
    defaults: dict[str, str] = field(default_factory=dict)
    precedence: tuple[int, ...] = ()

    def match(self, path: str) -> dict[str, str] | None:
        """Route parameters for ``path`` (already without prefix), or None."""
        found = self.regex.fullmatch(path.strip("/"))
        if found is None:
            return None
        params: dict[str, str] = {}
        for name, value in found.groupdict().items():
            if value is None:
                if name in self.defaults:
                    params[name] = self.defaults[name]
                continue
            value = unquote(value)
            if not all(check(value) for check in self.checks.get(name, [])):
                return None
            params[name] = value
        return params


def _split_constraints(body: str) -> list[str]:
    # Constraints are ':'-separated but a regex(...) argument may itself contain ':'.
    parts: list[str] = []
    depth = 0
    current = ""
    for char in body:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == ":" and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def compile_route(template: str) -> RouteTemplate:
    """Compile a trigger's ``route`` into a matcher."""
    text = template.strip().strip("/")
    checks: dict[str, list[_Check]] = {}
    defaults: dict[str, str] = {}
    precedence: list[int] = []
    pattern = ""
    segments = text.split("/") if text else []
    for index, segment in enumerate(segments):
        seg_pattern = ""
        kinds: list[int] = []
        pos = 0
        optional_segment = False
        for found in _PARAM.finditer(segment):
            seg_pattern += re.escape(segment[pos : found.start()])
            pos = found.end()
            name_part, *constraints = _split_constraints(found.group(1))
            catch_all = name_part.startswith("*")
            name_part = name_part.lstrip("*")
            optional = name_part.endswith("?")
            name_part = name_part.rstrip("?")
            name, eq, default = name_part.partition("=")
            name = name.strip()
            if not name.isidentifier():
                raise RouteTemplateError(f"route {template!r}: bad parameter name {name!r}")
            if eq:
                defaults[name] = default
                optional = True
            checks[name] = [_constraint(c) for c in constraints if c]
            if catch_all:
                seg_pattern += f"(?P<{name}>.*)" if not optional else f"(?P<{name}>.*)?"
                kinds.append(4)
                optional_segment = True
            else:
                seg_pattern += f"(?P<{name}>[^/]+)"
                kinds.append(3 if optional else (1 if constraints else 2))
                optional_segment = optional_segment or optional
        tail = segment[pos:]
        if "{" in tail or "}" in tail:
            raise RouteTemplateError(f"route {template!r}: unbalanced braces")
        seg_pattern += re.escape(tail)
        precedence.append(max(kinds) if kinds else 0)
        sep = "/" if index else ""
        if optional_segment and seg_pattern.startswith("(?P"):
            pattern += f"(?:{sep}{seg_pattern})?"
        else:
            pattern += sep + seg_pattern
    return RouteTemplate(
        template=template,
        regex=re.compile(pattern, re.IGNORECASE | re.DOTALL),
        checks=checks,
        defaults=defaults,
        precedence=tuple(precedence),
    )


def sort_key(route: RouteTemplate) -> tuple[tuple[int, ...], int]:
    """Literal segments beat parameters, constrained beat free, longer beats shorter."""
    return (route.precedence, -len(route.precedence))
