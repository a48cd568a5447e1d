"""Turns a payload (a dict from a file or a plugin) into a checked :class:`HardwareProfile`.

All of a payload's problems are collected before anything is raised, so a vendor fixing a new
profile sees every error in one run.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from llm_d_lens.hardware import rules
from llm_d_lens.hardware.errors import ProfileInvalid, ProfileIssue
from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.hardware.schema import json_path, schema_issues


def validate_payload(payload: Any, source: str) -> HardwareProfile:
    """The profile in ``payload``, or :class:`ProfileInvalid` listing every problem.

    ``schema.json`` is generated from the models, and ``test_schema.py`` proves both accept and
    refuse the same payloads; so the compiled model check runs first (a fraction of the cost of
    walking the schema, which matters at startup with many plugins), and the schema is walked
    only to explain a refusal with every JSON path at once.
    """
    from pydantic import ValidationError

    profile_id = payload.get("id") if isinstance(payload, dict) and isinstance(payload.get("id"), str) else None
    try:
        profile = HardwareProfile.model_validate(payload, strict=True)
    except ValidationError as exc:
        issues = schema_issues(payload) or _pydantic_issues(exc)
        issues += _rule_issues_beside(payload, issues)
        raise ProfileInvalid(source, issues, profile_id) from None
    issues = rules.check(profile)
    if issues:
        raise ProfileInvalid(source, issues, profile_id)
    return profile


def _rule_issues_beside(payload: Any, schema_found: list[ProfileIssue]) -> list[ProfileIssue]:
    """Rule violations in the parts of a payload the schema did not refuse.

    The rules need a typed profile, so without this a vendor would fix the schema errors only to
    meet a second round (a floating chart version, say). The refused values are set aside and the
    rest checked; when that is not possible (a required field is missing, an error sits inside a
    list), only the schema errors are reported. A rule error at or below an already reported path
    is left out: it would only echo the value that was set aside.
    """
    from pydantic import ValidationError

    if not isinstance(payload, dict):
        return []
    locations = [issue.location for issue in schema_found]
    if any(not loc or any(isinstance(part, int) for part in loc) for loc in locations):
        return []
    rest = copy.deepcopy(payload)
    for location in locations:
        parent: Any = rest
        for part in location[:-1]:
            parent = parent.get(part) if isinstance(parent, dict) else None
        if isinstance(parent, dict):
            parent.pop(location[-1], None)
    try:
        profile = HardwareProfile.model_validate(rest, strict=True)
    except ValidationError:
        return []
    reported = [issue.path for issue in schema_found]
    return [
        issue for issue in rules.check(profile)
        if not any(issue.path == r or issue.path.startswith((r + ".", r + "[")) for r in reported)
    ]


def _pydantic_issues(exc: Exception) -> list[ProfileIssue]:
    """The schema and the models agree by test; this only guards against a drift slipping by."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return [ProfileIssue("$", str(exc), has_value=False)]
    return [ProfileIssue(json_path(e["loc"]), e["msg"], e.get("input")) for e in errors()]


def read_profile_file(path: str | Path) -> Any:
    """The JSON payload of a profile file, or :class:`ProfileInvalid` naming the file and position."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProfileInvalid(str(path), [ProfileIssue("$", f"cannot read the file ({exc.strerror})", has_value=False)]) from None
    except UnicodeDecodeError:
        raise ProfileInvalid(str(path), [ProfileIssue("$", "is not UTF-8 text", has_value=False)]) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProfileInvalid(
            str(path), [ProfileIssue("$", f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", has_value=False)]
        ) from None
    except RecursionError:
        raise ProfileInvalid(str(path), [ProfileIssue("$", "not valid JSON: nested too deeply", has_value=False)]) from None


def load_profile_file(path: str | Path) -> HardwareProfile:
    return validate_payload(read_profile_file(path), str(path))
