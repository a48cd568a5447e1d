"""Numbers as a person reads them: a unit per quantity, chosen once so cards, tables and charts agree."""

from __future__ import annotations

import math
from datetime import datetime, timezone

GiB = 2**30


def number(value: float | int | None, digits: int = 0) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{value:,.{digits}f}"


def gib(value_bytes: float | int | None) -> str:
    if value_bytes is None:
        return "–"
    return f"{value_bytes / GiB:,.1f} GiB"


#: common unit -> (display unit, factor from the common unit, decimals)
DISPLAY: dict[str, tuple[str, float, int]] = {
    "ratio": ("%", 100.0, 0),
    "bytes": ("GiB", 1 / GiB, 1),
    "W": ("W", 1.0, 0),
    "J": ("MJ", 1e-6, 2),
    "celsius": ("°C", 1.0, 0),
}


def display_unit(unit: str) -> str:
    return DISPLAY.get(unit, (unit, 1.0, 2))[0]


def scaled(value: float, unit: str) -> float:
    """``value`` (in its common unit) in the unit it is shown in (a ratio as percent, bytes as GiB)."""
    return value * DISPLAY.get(unit, (unit, 1.0, 2))[1]


def quantity(value: float | None, unit: str) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    shown, _, digits = DISPLAY.get(unit, (unit, 1.0, 2))
    return f"{scaled(value, unit):,.{digits}f} {shown}".replace(" %", "%")


def clock(unix_seconds: float) -> str:
    return datetime.fromtimestamp(unix_seconds, tz=timezone.utc).strftime("%H:%M")


def moment(unix_seconds: float) -> str:
    return datetime.fromtimestamp(unix_seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def iso(moment_: float | str | None) -> str:
    """A time for ``<time datetime>``: unix seconds as ISO 8601 UTC; text (already ISO) as it is."""
    if moment_ is None:
        return ""
    if isinstance(moment_, str):
        return moment_
    return datetime.fromtimestamp(moment_, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def since(unix_seconds: float | str | None) -> str:
    """An absolute time as the page says it without its script: ``at 14:02:07 UTC`` (the script makes it ``12 s ago``)."""
    if unix_seconds is None:
        return "at an unknown time"
    if isinstance(unix_seconds, str):
        try:
            unix_seconds = datetime.fromisoformat(unix_seconds.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return f"at {unix_seconds}"
    return "at " + datetime.fromtimestamp(unix_seconds, tz=timezone.utc).strftime("%H:%M:%S UTC")
