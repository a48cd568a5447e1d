"""Turns a payload (a dict from a file or a plugin) into a checked :class:`HardwareProfile`.

All of a payload's problems are collected before anything is raised, so a vendor fixing a new
profile sees every error in one run.
"""

from __future__ import annotations

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
        raise ProfileInvalid(source, issues, profile_id) from None
    issues = rules.check(profile)
    if issues:
        raise ProfileInvalid(source, issues, profile_id)
    return profile


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
