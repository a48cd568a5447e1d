"""Turns a payload (a dict from a file or a plugin) into a checked :class:`HardwareProfile`.

All of a payload's problems are collected before anything is raised, so a vendor fixing a new
profile sees every error in one run.
"""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path
from typing import Any

from llm_d_lens.hardware.errors import ProfileInvalid, ProfileIssue
from llm_d_lens.hardware.models import HardwareProfile, NetworkProfile
from llm_d_lens.hardware.schema import json_path, schema_issues


def validate_payload(payload: Any, source: str, *, telemetry_providers: frozenset[str] | None = None) -> HardwareProfile:
    """The profile in ``payload``, or :class:`ProfileInvalid` listing every problem.

    With ``telemetry_providers`` (the registered ids), a ``telemetry.provider_id`` outside them is one
    more problem: ``lens hardware validate`` checks a file against the installed environment, while
    discovery leaves that to ``doctor`` and ``/readyz`` so an unregistered provider costs telemetry only.

    ``schema.json`` is generated from the models, and ``test_schema.py`` proves both accept and
    refuse the same payloads; so the compiled model check runs first (a fraction of the cost of
    walking the schema, which matters at startup with many plugins), and the schema is walked
    only to explain a refusal with every JSON path at once.
    """
    from msgspec import ValidationError

    from llm_d_lens.hardware import rules  # here, not above: a payload whose pass is stored (verdicts.py) needs no rules

    profile_id = payload.get("id") if isinstance(payload, dict) and isinstance(payload.get("id"), str) else None
    unreadable = value_issues(payload)
    if unreadable:
        payload = _set_aside(payload, unreadable)  # later passes then neither choke on them nor echo them
    try:
        profile = HardwareProfile.decode(payload)
    except ValidationError as exc:
        issues = schema_issues(payload) or ([] if unreadable else [_model_issue(exc)])
        issues += _rule_issues_beside(payload, issues, telemetry_providers)
        raise ProfileInvalid(source, _merged(unreadable, issues), profile_id) from None
    issues = rules.check(profile)
    if telemetry_providers is not None:
        issues += rules.registered_issues(profile, telemetry_providers)
    if issues or unreadable:
        raise ProfileInvalid(source, _merged(unreadable, issues), profile_id)
    return profile


#: the largest integer a profile may hold: JSON readers elsewhere (Go's, the API server's) stop at int64
MAX_PROFILE_INTEGER = 2**63 - 1
#: the longest string anywhere in a profile (fields bound names far lower); a 100 MB value is refused
#: before the schema, the rules or a message ever copy it
MAX_PROFILE_STRING = 4096


def value_issues(payload: Any) -> list[ProfileIssue]:
    """Values no profile field can mean, wherever they sit: checked before the schema, which cannot say it.

    A plugin hands Lens Python objects, not JSON text, so ``float("nan")``, ``10**5000`` or a lone
    surrogate (``"\\udc80"``) arrive untouched by the JSON reader; the last validated, then made
    ``/api/v1/hardware/capabilities`` fail to encode its answer.
    """
    found: list[ProfileIssue] = []
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), payload)]
    while stack:
        location, value = stack.pop()
        if isinstance(value, str) and len(value) > MAX_PROFILE_STRING:
            found.append(ProfileIssue(json_path(location), f"is too long: {len(value)} characters, at most "
                                      f"{MAX_PROFILE_STRING}", f"({len(value)} characters)", location=location))
            continue
        if isinstance(value, str):
            if _has_surrogate(value):
                found.append(ProfileIssue(json_path(location), "is not valid Unicode text (a lone surrogate)",
                                          value, location=location))
            elif (control := _control(value)) is not None:
                found.append(ProfileIssue(json_path(location), f"holds the control character U+{ord(control):04X}; "
                                          "profile text is printable, on one line", value, location=location))
        elif isinstance(value, bool):
            continue
        elif isinstance(value, int):
            if abs(value) > MAX_PROFILE_INTEGER:
                found.append(ProfileIssue(json_path(location), "is out of range (a profile integer is at most 2^63-1)",
                                          f"(an integer of {value.bit_length()} bits)", location=location))
        elif isinstance(value, float):
            if not math.isfinite(value):
                found.append(ProfileIssue(json_path(location), "is not a finite number", str(value), location=location))
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and len(key) > MAX_PROFILE_STRING:
                    found.append(ProfileIssue(json_path(location), f"has a key that is not printable Unicode text of at "
                                              f"most {MAX_PROFILE_STRING} characters ({len(key)} characters)",
                                              f"({len(key)} characters)", location=location))
                    continue
                if isinstance(key, str) and (_has_surrogate(key) or _control(key) is not None):
                    found.append(ProfileIssue(json_path(location), "has a key that is not printable Unicode text (a lone surrogate or a control character)",
                                              key, location=location))
                    continue
                stack.append(((*location, key), item))
        elif isinstance(value, list):
            stack.extend(((*location, index), item) for index, item in enumerate(value))
    return sorted(found, key=lambda issue: issue.path)


def _set_aside(payload: Any, issues: list[ProfileIssue]) -> Any:
    """A copy of ``payload`` with each value ``issues`` points at replaced by a plain one of its type (a key
    dropped), so the schema and the rules still check everything else in the same run; what they find
    at a path already reported is dropped by :func:`_merged`."""
    rest = copy.deepcopy(payload)
    for issue in issues:
        location = issue.location or ()
        if not location:
            return None
        parent: Any = rest
        for part in location[:-1]:
            parent = parent[part]
        if "has a key" in issue.message:
            target = parent[location[-1]]
            for key in [k for k in target if isinstance(k, str) and (len(k) > MAX_PROFILE_STRING or _has_surrogate(k)
                                                                     or _control(k) is not None)]:
                del target[key]
        else:
            parent[location[-1]] = _stand_in(parent[location[-1]])
    return rest


def _stand_in(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_PROFILE_STRING:
        return "_"
    if isinstance(value, str):
        return _CONTROL.sub("_", value.encode("utf-8", "replace").decode("utf-8")) or "_"
    if isinstance(value, float):
        return 1.0
    if isinstance(value, int):
        return 1
    return None


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _control(text: str) -> str | None:
    """The first control character (C0, DEL, C1) in ``text``: a trailing newline in a version or a
    label, a NUL in a directory name, an escape sequence in a label shown in a terminal."""
    found = _CONTROL.search(text)
    return found.group() if found else None


def _has_surrogate(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _merged(first: list[ProfileIssue], second: list[ProfileIssue]) -> list[ProfileIssue]:
    """Both lists, without a second report of a path already reported."""
    seen = {issue.path for issue in first}
    return first + [issue for issue in second if issue.path not in seen]


def _rule_issues_beside(payload: Any, schema_found: list[ProfileIssue],
                        telemetry_providers: frozenset[str] | None = None) -> list[ProfileIssue]:
    """Rule violations in the parts of a payload the schema did not refuse.

    The rules need a typed profile, so without this a vendor would fix the schema errors only to
    meet a second round (a floating chart version, say). The refused values are set aside and the
    rest checked; when that is not possible (a required field is missing, an error sits inside a
    list), only the schema errors are reported. A rule error at or below an already reported path
    is left out: it would only echo the value that was set aside.
    """
    from msgspec import ValidationError

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
        profile = HardwareProfile.decode(rest)
    except ValidationError:
        return []
    from llm_d_lens.hardware import rules

    reported = [issue.path for issue in schema_found]
    found = rules.check(profile)
    if telemetry_providers is not None:
        found += rules.registered_issues(profile, telemetry_providers)
    return [
        issue for issue in found
        if not any(issue.path == r or issue.path.startswith((r + ".", r + "[")) for r in reported)
    ]


#: msgspec's message: "Expected `str`, got `int` - at `$.deployment.arch`"
_AT = re.compile(r"^(?P<message>.*?)(?: - at `(?P<path>\$[^`]*)`)?$", re.S)


def _model_issue(exc: Exception) -> ProfileIssue:
    """The model's refusal where the schema finds none: a cross-field check (a sentinel with nothing to match).

    The schema and the models agree by test on everything a schema can say, so this is the
    models' own checks, reported at the object msgspec names.
    """
    found = _AT.match(str(exc))
    assert found is not None  # the pattern matches any text
    return ProfileIssue(found["path"] or "$", found["message"], has_value=False)


def validate_network_payload(payload: Any, source: str) -> NetworkProfile:
    """A ``kind: network`` payload checked into :class:`NetworkProfile`, or :class:`ProfileInvalid` listing
    every problem: the model's refusal, or each of its patterns that is no regular expression or would
    backtrack (a NIC pattern is matched against every node's resources, as an accelerator's is)."""
    from msgspec import ValidationError

    from llm_d_lens.hardware.regex_safety import backtracking_problem

    try:
        profile = NetworkProfile.decode(payload)
    except ValidationError as exc:
        issue = _model_issue(exc)  # the one reading of msgspec's refusal, as for an accelerator
        found, value = _value_at(payload, issue.path)
        raise ProfileInvalid(source, [ProfileIssue(issue.path, issue.message, value, has_value=found)]) from None
    patterns = [(f"$.resource_patterns[{i}]", p) for i, p in enumerate(profile.resource_patterns)]
    if profile.network.device_group_pattern:
        patterns.append(("$.network.device_group_pattern", profile.network.device_group_pattern))
    issues: list[ProfileIssue] = []
    for where, pattern in patterns:
        try:
            re.compile(pattern)
            slow = backtracking_problem(pattern)
        except re.error as exc:
            issues.append(ProfileIssue(where, f"is not a valid regular expression ({exc})", pattern))
            continue
        if slow is not None:
            issues.append(ProfileIssue(where, f"is refused: it {slow} (see docs/limits.md)", pattern))
    if issues:
        raise ProfileInvalid(source, issues, profile.id)
    return profile


def _value_at(payload: Any, path: str) -> tuple[bool, Any]:
    """(found, value) at a ``$.a.b[0]`` path msgspec named, so the refusal shows what was there."""
    value = payload
    for key, index in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path[1:]):
        if key and isinstance(value, dict) and key in value:
            value = value[key]
        elif index and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        else:
            return False, None
    return True, value


def read_profile_file(path: str | Path) -> Any:
    """The JSON payload of a profile file, or :class:`ProfileInvalid` naming the file and position."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProfileInvalid(str(path), [ProfileIssue("$", f"cannot read the file ({exc.strerror})", has_value=False)]) from None
    except UnicodeDecodeError:
        raise ProfileInvalid(str(path), [ProfileIssue("$", "is not UTF-8 text", has_value=False)]) from None
    return parse_profile_text(text, str(path))


def parse_profile_text(text: str, source: str) -> Any:
    """A profile's JSON text read under :mod:`llm_d_lens.jsonread`'s policy: finite numbers, no repeated keys."""
    from llm_d_lens.jsonread import MAX_DEPTH, JsonRefused, loads

    try:
        return loads(text, reject_repeats=True, max_depth=MAX_DEPTH)
    except json.JSONDecodeError as exc:
        raise ProfileInvalid(
            source, [ProfileIssue("$", f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", has_value=False)]
        ) from None
    except JsonRefused as exc:
        issues = [ProfileIssue(f.path, "not valid JSON: nested too deeply", has_value=False) if "nest" in f.message
                  else ProfileIssue(f.path, f.message, f.value) for f in exc.findings]
        raise ProfileInvalid(source, issues) from None


def load_profile_file(path: str | Path) -> HardwareProfile:
    """A profile file checked as ``lens hardware validate`` checks it: the contract, and its telemetry
    provider against the ones registered in this environment."""
    from llm_d_lens.hardware.telemetry_providers import registered_ids

    return validate_payload(read_profile_file(path), str(path), telemetry_providers=registered_ids())
