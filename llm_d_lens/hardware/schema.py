"""``schema.json``: generated from the models, shipped for vendors, used to validate every payload.

Run ``python -m llm_d_lens.generate`` (``make generate``) after changing ``models.py``; its check
(``generate/test_generate.py``) fails while the committed file and the models disagree.
``python -m llm_d_lens.hardware.schema`` prints the schema the models give.
"""

from __future__ import annotations

import json
import os
import sys
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from llm_d_lens.hardware.errors import ProfileIssue

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

SCHEMA_ID = "https://llm-d.ai/lens/hardware-profile.schema.json"
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def generate_schema() -> dict[str, Any]:
    """The JSON Schema the models describe, with the dialect and id a vendor's editor needs."""
    import msgspec

    from llm_d_lens.hardware.models import HardwareProfile, NetworkProfile

    # the network device kind is described beside the profile ($defs.NetworkProfile), for a vendor's editor
    _, definitions = msgspec.json.schema_components([HardwareProfile, NetworkProfile])
    definitions = dict(definitions)
    root = definitions.pop(HardwareProfile.__name__)  # the profile itself at the top, as an editor expects
    return {"$schema": DIALECT, "$id": SCHEMA_ID, **root, "$defs": definitions}


def render_schema(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


@lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    with open(os.path.join(os.path.dirname(__file__), "schema.json"), encoding="utf-8") as handle:
        return json.load(handle)


@lru_cache(maxsize=1)
def validator() -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(load_schema())


def json_path(parts: Any) -> str:
    """``$.deployment.modes.dra.device_class`` / ``$.access_modes[0]`` from a jsonschema path."""
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if _plain(part) else f"[{json.dumps(part)}]")
    return out


def _plain(key: str) -> bool:
    return key.replace("_", "a").replace("-", "a").isalnum()


def schema_issues(payload: Any) -> list[ProfileIssue]:
    """Every schema violation in ``payload`` (not just the first), sorted by path."""
    unique: dict[tuple[str, str], ProfileIssue] = {}
    for error in validator().iter_errors(payload):
        for issue in _issues_from(error):
            unique.setdefault((issue.path, issue.message), issue)
    return [unique[key] for key in sorted(unique)]


def _issues_from(error: Any) -> list[ProfileIssue]:
    path = list(error.absolute_path)
    kind, instance, rule = error.validator, error.instance, error.validator_value
    if kind == "additionalProperties" and isinstance(instance, dict):
        from llm_d_lens.hardware.guide_forms import REMOVED_FIELDS

        allowed = set(error.schema.get("properties", {}))
        parent = tuple(str(part) for part in path)
        return [
            _issue([*path, key], f"unknown key: {REMOVED_FIELDS[(parent, key)]}" if (parent, key) in REMOVED_FIELDS
                   else "unknown key", instance[key])
            for key in instance
            if key not in allowed
        ]
    if kind == "required":
        missing = [key for key in rule if isinstance(instance, dict) and key not in instance]
        return [_issue([*path, key], "required field is missing", has_value=False) for key in missing]
    if kind == "anyOf":
        return _any_of_issues(error, path)
    if kind == "propertyNames":
        return [_issue(path, f"key {error.instance!r} is not allowed here", error.instance)]
    if kind in {"enum", "const", "type"} and path == ["schema_version"]:
        from llm_d_lens.hardware.models import SUPPORTED_SCHEMA_VERSIONS

        accepted = ", ".join(map(str, SUPPORTED_SCHEMA_VERSIONS))
        return [_issue(["schema_version"], f"unsupported schema_version; this Lens reads version {accepted}", instance)]
    messages = {
        "type": lambda: f"expected {_type_name(rule)}",
        "enum": lambda: f"must be one of {', '.join(json.dumps(v) for v in rule)}",
        "const": lambda: f"must be {json.dumps(rule)}",
        "pattern": lambda: f"does not match the pattern {rule}",
        "minLength": lambda: "must not be empty" if rule == 1 else f"must have at least {rule} characters",
        "maxLength": lambda: f"is longer than {rule} characters, the most this field may have",
        "minItems": lambda: "must not be empty" if rule == 1 else f"must have at least {rule} items",
        "minProperties": lambda: "must not be empty" if rule == 1 else f"must have at least {rule} entries",
        "exclusiveMinimum": lambda: f"must be greater than {rule}",
        "minimum": lambda: f"must be at least {rule}",
        "maximum": lambda: f"must be at most {rule}",
        "anyOf": lambda: "matches none of the allowed shapes",
    }
    message = messages[kind]() if kind in messages else error.message
    return [_issue(path, message, instance)]


def _issue(parts: Any, message: str, value: Any = None, has_value: bool = True) -> ProfileIssue:
    return ProfileIssue(json_path(parts), message, value, has_value, location=tuple(parts))


def _any_of_issues(error: Any, path: list[Any]) -> list[ProfileIssue]:
    """An optional or union field: report why the branch of the value's own shape failed.

    ``Driver | None`` becomes ``anyOf[object, null]``; for an object value the useful errors are
    the object branch's (an unknown key deep inside), not "is not null".
    """
    wrong_type = [e for e in error.context if e.validator == "type" and list(e.absolute_path) == path]
    relevant = [e for e in error.context if e not in wrong_type]
    if relevant:
        issues: list[ProfileIssue] = []
        for sub in relevant:
            issues.extend(_issues_from(sub))
        return issues
    expected = [e.validator_value for e in wrong_type]
    flat = [t for rule in expected for t in (rule if isinstance(rule, list) else [rule])]
    return [_issue(path, f"expected {_type_name(flat)}", error.instance)]


def _type_name(rule: Any) -> str:
    names = {"object": "an object", "array": "a list", "string": "a string", "integer": "an integer",
             "number": "a number", "boolean": "true or false", "null": "null"}
    if isinstance(rule, list):
        return " or ".join(names.get(r, str(r)) for r in rule)
    return names.get(rule, str(rule))


def main() -> int:
    sys.stdout.write(render_schema(generate_schema()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
