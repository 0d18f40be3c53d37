"""Numbers from text, read one way: a caller's query values and the app's numeric settings.

ASCII only: `str.isdigit`, `int` and `float` also take other scripts' digits, and disagree on some
('²' passes `isdigit`, not `int`; '٣' passes both).
"""

from __future__ import annotations

from collections.abc import Mapping

from ._errors import HostingConfigurationError


def whole_number(text: str, max_digits: int) -> int | None:
    """`text` as a whole number when it is 1 to `max_digits` ASCII digits, else None."""
    if not 0 < len(text) <= max_digits or not text.isascii() or not text.isdigit():
        return None
    return int(text)


def _number(text: str) -> float | None:
    if not text.isascii():
        return None
    try:
        return float(text)
    except ValueError:
        return None


def number_setting(
    environ: Mapping[str, str], name: str, *, low: float, high: float, unit: str, whole: bool = False
) -> float | None:
    """The setting `name` as a number from `low` to `high` (a whole one when `whole`), None when
    unset. Anything else raises `HostingConfigurationError` naming the setting, its unit and range:
    read at startup, so a value no request could work with never starts the app."""
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    value = whole_number(raw, 20) if whole else _number(raw)
    if value is None or not low <= value <= high:  # NaN fails the comparison too
        kind = "a whole number" if whole else "a number"
        raise HostingConfigurationError(
            f"{name} must be {kind} of {unit} from {low:g} to {high:g}, not {raw!r}"
        )
    return value

