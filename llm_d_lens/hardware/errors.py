"""Errors of the hardware contract, each naming the profile, where it came from and the field."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from llm_d_lens.errors import MAX_REPORTED, LensError


class ProfileOrigin(msgspec.Struct, frozen=True):
    """Where a profile payload came from, so every error can point at it."""

    kind: str  # "bundled" | "entry-point" | "file"
    location: str  # a file path, or "distribution version"
    entry_point: str | None = None

    def __str__(self) -> str:
        if self.kind == "entry-point":
            return f"entry point {self.entry_point!r} of {self.location}"
        if self.kind == "bundled":
            return f"bundled profile {self.location}"
        return self.location

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "location": self.location, "entry_point": self.entry_point}


def render_value(value: Any, limit: int = 80) -> str:
    """A short, JSON-looking rendering of an offending value for messages."""
    try:
        text = json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ProfileIssue(msgspec.Struct, frozen=True, eq=False):
    """One problem in one profile: a JSON path, what is wrong, and the value found there.

    A Struct, not a frozen dataclass (whose creation costs every command about a millisecond);
    equal and hashed by what it says, not by ``location``.
    """

    path: str
    message: str
    value: Any = None
    has_value: bool = True
    #: the same path as keys and indexes, when known: lets the loader set the offending part aside
    location: tuple[str | int, ...] | None = None

    def _said(self) -> tuple[Any, ...]:
        return (self.path, self.message, self.value, self.has_value)

    def __eq__(self, other: object) -> bool:
        return self._said() == other._said() if isinstance(other, ProfileIssue) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._said())

    def __repr__(self) -> str:
        return f"ProfileIssue(path={self.path!r}, message={self.message!r}, value={self.value!r}, has_value={self.has_value!r})"

    def __str__(self) -> str:
        shown = f" (value: {render_value(self.value)})" if self.has_value else ""
        return f"{self.path}: {self.message}{shown}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "message": self.message}
        if self.has_value:
            out["value"] = self.value
        return out


class ProfileInvalid(LensError):
    code = "PROFILE_INVALID"
    http_status = 422

    def __init__(self, source: str, issues: list[ProfileIssue], profile_id: str | None = None):
        self.source = source
        self.issues = issues
        self.profile_id = profile_id
        who = f"profile {profile_id!r} from {source}" if profile_id else source
        lines = [f"{who}: {len(issues)} problem{'s' if len(issues) != 1 else ''}"]
        lines += [f"  {issue}" for issue in issues[:MAX_REPORTED]]
        if len(issues) > MAX_REPORTED:
            lines.append(f"  ... and {len(issues) - MAX_REPORTED} more")
        super().__init__("\n".join(lines), details={"source": source, "issues": [i.to_dict() for i in issues]})


class RegistrationConflict(LensError):
    code = "REGISTRATION_CONFLICT"
    http_status = 500

    def __init__(self, field: str, value: Any, first: tuple[str, str], second: tuple[str, str]):
        (first_id, first_from), (second_id, second_from) = first, second
        self.field, self.value = field, value
        message = (
            f"registration conflict: {field} {render_value(value)} is claimed by profile {first_id!r} "
            f"({first_from}) and by profile {second_id!r} ({second_from})"
        )
        super().__init__(
            message,
            details={
                "field": field,
                "value": value,
                "profiles": [{"id": first_id, "from": first_from}, {"id": second_id, "from": second_from}],
            },
        )


class AcceleratorNotRegistered(LensError):
    code = "ACCELERATOR_NOT_REGISTERED"
    http_status = 404

    def __init__(self, key: str, nearest: list[str], reason: str | None = None, kind: str = "hardware"):
        self.key, self.nearest = key, nearest
        message = f"ACCELERATOR_NOT_REGISTERED: no registered {kind} matches {key!r}"
        if reason:
            message += f": {reason}"
        elif nearest:
            message += f"; nearest registered names: {', '.join(nearest)}"
        super().__init__(message, details={"key": key, "nearest": nearest, **({"reason": reason} if reason else {})})


class AlreadyRegistered(LensError):
    code = "PROVIDER_ALREADY_REGISTERED"
    http_status = 409


class PluginLoadFailed(LensError):
    """The hardware asked for exists only in a plugin that was skipped: the operator's to fix (503)."""

    code = "PLUGIN_LOAD_FAILED"
    http_status = 503


class ScaffoldRefused(LensError):
    """``lens hardware new`` was given flags that make no valid plugin, or a directory in use."""

    code = "SCAFFOLD_REFUSED"
    http_status = 422
