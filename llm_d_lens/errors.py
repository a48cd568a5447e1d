"""Errors Lens reports to a user.

Every error a user can meet is a :class:`LensError` with a stable ``code``. Domains raise them;
the edges (CLI, API) render them once, as a message with a non-zero exit code or as
``application/problem+json``, never as a traceback.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

#: problems one error lists; the rest are counted, not shown (a million unknown keys is one finding)
MAX_REPORTED = 50
#: characters of one value an error echoes back; a 16 MB value is shown by its start and its length
MAX_ECHO = 200
#: characters of an error's whole message (the problem's ``detail``)
MAX_MESSAGE = 8000


def limited(items: list[str], limit: int = MAX_REPORTED, separator: str = "; ") -> str:
    """``items`` joined, the first ``limit`` of them, then how many more there are."""
    shown = separator.join(items[:limit])
    return shown if len(items) <= limit else f"{shown}{separator}... and {len(items) - limit} more"


def clip(text: str, limit: int = MAX_ECHO) -> str:
    """``text`` cut to about ``limit`` characters, with a marker saying how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...[{len(text) - limit} more characters]"


def echo(value: Any, limit: int = MAX_ECHO, depth: int = 8) -> Any:
    """``value`` made safe to echo in JSON: strings clipped and valid UTF-8, lists and objects cut to
    :data:`MAX_REPORTED` entries, non-finite floats as text, nesting bounded, and at most
    :data:`MAX_ECHO_VALUES` values in all.

    Whatever a caller sent, the error about it stays small and encodable: an answer that echoed a
    NaN or a lone surrogate could not be written at all (a 500), and one echoing a 16 MB value three
    times is a 48 MB answer. The work is bounded as well as the answer: nothing is serialised or
    copied whole before it is cut, so a value that shares one list a billion times over (YAML
    aliases) costs the same as a small one.
    """
    return _echo(value, limit, depth, [MAX_ECHO_VALUES])


#: values one echo shows in all, however they nest; the rest are "..."
MAX_ECHO_VALUES = 500


def _echo(value: Any, limit: int, depth: int, budget: list[int]) -> Any:
    budget[0] -= 1
    if isinstance(value, str):
        value = clip(value, limit)  # cut before any work on it
        if not value.isascii():
            value = value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if value.bit_length() <= 64 else f"(an integer of {value.bit_length()} bits)"
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth <= 0 or budget[0] <= 0:
        return "..."
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in itertools.islice(value.items(), MAX_REPORTED):
            if budget[0] <= 0:
                break
            out[_echo(key if isinstance(key, str) else _short_repr(key, limit), limit, 1, budget)] = \
                _echo(item, limit, depth - 1, budget)
        if len(value) > len(out):
            out["..."] = f"{len(value) - len(out)} more entries"
        return out
    if isinstance(value, (list, tuple, set, frozenset)):
        out_list: list[Any] = []
        for item in itertools.islice(value, MAX_REPORTED):
            if budget[0] <= 0:
                break
            out_list.append(_echo(item, limit, depth - 1, budget))
        if len(value) > len(out_list):
            out_list.append(f"... and {len(value) - len(out_list)} more")
        return out_list
    return _short_repr(value, limit)


def _short_repr(value: Any, limit: int) -> str:
    """``repr`` that never renders more than it shows (:mod:`reprlib` cuts containers as it goes)."""
    import reprlib

    shorter = reprlib.Repr()
    shorter.maxstring = shorter.maxother = limit
    shorter.maxlevel = 3
    return clip(shorter.repr(value), limit)


class LensError(Exception):
    """Base for every error Lens shows to a user."""

    code: str = "LENS_ERROR"
    #: HTTP status the API answers with when this error reaches it.
    http_status: int = 400

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details: dict[str, Any] = details or {}

    def __str__(self) -> str:
        return self.message

    def to_problem(self) -> dict[str, Any]:
        """The RFC 9457 problem document the API returns for this error."""
        problem: dict[str, Any] = {
            "type": f"urn:llm-d-lens:error:{self.code}",
            "title": self.code,
            "status": self.http_status,
            "detail": echo(self.message, MAX_MESSAGE),
            "code": self.code,
        }
        if self.details:
            problem["details"] = echo(self.details)
        return problem


class ServerNotConfigured(LensError):
    """The API server lacks a setting it needs: the operator's to fix, not the caller's."""

    code = "SERVER_NOT_CONFIGURED"
    http_status = 503
