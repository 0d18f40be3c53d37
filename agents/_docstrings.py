"""Docstring reading for tool schemas: a summary plus per-parameter descriptions.

Understands the three common styles (Google ``Args:``, Sphinx ``:param x:``, NumPy
``Parameters`` with an underline) because tool authors use all of them.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

_GOOGLE_HEADERS = {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments"}
_SECTION_HEADERS = _GOOGLE_HEADERS | {
    "returns",
    "return",
    "yields",
    "raises",
    "examples",
    "example",
    "notes",
    "note",
    "see also",
    "attributes",
}
_GOOGLE_PARAM = re.compile(r"^\*{0,2}(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(\([^)]*\))?\s*:\s*(?P<desc>.*)$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*:\s*(?P<desc>.*)$")
_NUMPY_PARAM = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(:.*)?$")


@dataclass
class ParsedDocstring:
    """What a tool's docstring says: a summary and a description per parameter name."""

    summary: str = ""
    params: dict[str, str] = field(default_factory=dict)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _is_header(lines: list[str], i: int) -> bool:
    stripped = lines[i].strip()
    if stripped.rstrip(":").lower() in _SECTION_HEADERS and stripped.endswith(":"):
        return True
    if stripped.startswith(":") and re.match(r"^:(param|type|return|returns|rtype|raises)\b", stripped):
        return True
    # NumPy: a title line followed by a line of dashes.
    return i + 1 < len(lines) and bool(stripped) and bool(re.fullmatch(r"-{3,}", lines[i + 1].strip()))


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Split a docstring into its summary (text before the first section) and parameter texts."""
    if not doc:
        return ParsedDocstring()
    lines = inspect.cleandoc(doc).splitlines()
    summary_lines: list[str] = []
    i = 0
    while i < len(lines) and not _is_header(lines, i):
        summary_lines.append(lines[i])
        i += 1
    parsed = ParsedDocstring(summary=" ".join(" ".join(summary_lines).split()))
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith(":param"):
            i = _read_sphinx(lines, i, parsed)
        elif stripped.endswith(":") and stripped.rstrip(":").lower() in _GOOGLE_HEADERS:
            i = _read_google(lines, i + 1, parsed)
        elif (
            i + 1 < len(lines)
            and re.fullmatch(r"-{3,}", lines[i + 1].strip())
            and stripped.lower() in {"parameters", "other parameters"}
        ):
            i = _read_numpy(lines, i + 2, parsed)
        else:
            i += 1
    return parsed


def _read_google(lines: list[str], i: int, parsed: ParsedDocstring) -> int:
    base: int | None = None
    current: str | None = None
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        indent = _indent(line)
        if base is None:
            if indent == 0:
                return i
            base = indent
        if indent < base:
            return i
        match = _GOOGLE_PARAM.match(line.strip()) if indent == base else None
        if match:
            current = match.group("name")
            parsed.params[current] = match.group("desc").strip()
        elif current is not None:
            parsed.params[current] = f"{parsed.params[current]} {line.strip()}".strip()
        i += 1
    return i


def _read_sphinx(lines: list[str], i: int, parsed: ParsedDocstring) -> int:
    match = _SPHINX_PARAM.match(lines[i].strip())
    i += 1
    if not match:
        return i
    name = match.group("name")
    parts = [match.group("desc").strip()]
    while (
        i < len(lines) and lines[i].strip() and not lines[i].strip().startswith(":") and _indent(lines[i]) > 0
    ):
        parts.append(lines[i].strip())
        i += 1
    parsed.params[name] = " ".join(p for p in parts if p)
    return i


def _read_numpy(lines: list[str], i: int, parsed: ParsedDocstring) -> int:
    current: str | None = None
    while i < len(lines):
        line = lines[i]
        if _is_header(lines, i) and _indent(line) == 0 and not _NUMPY_PARAM.match(line.strip() or "-"):
            return i
        if i + 1 < len(lines) and re.fullmatch(r"-{3,}", lines[i + 1].strip()):
            return i
        if not line.strip():
            i += 1
            continue
        if _indent(line) == 0:
            match = _NUMPY_PARAM.match(line.strip())
            if match is None:
                return i
            current = match.group("name")
            parsed.params[current] = ""
        elif current is not None:
            parsed.params[current] = f"{parsed.params[current]} {line.strip()}".strip()
        i += 1
    return i
