"""Evaluation times as users type them: Unix seconds or an ISO 8601 timestamp with a zone."""

from __future__ import annotations

import math
from datetime import datetime


def parse_instant(text: str) -> float:
    """Unix seconds; ``ValueError`` says what is wrong.

    A time without a zone is refused rather than read as local time: on a server (or in a CI job)
    "local" is rarely the zone the user meant, and Prometheus would silently answer another hour.
    """
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        if math.isfinite(seconds):
            return seconds
        raise ValueError("is not a finite number of seconds")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError("is neither Unix seconds nor an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise ValueError("has no time zone; add Z or an offset")
    return moment.timestamp()
