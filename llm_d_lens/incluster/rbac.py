"""Reading rendered RBAC objects as exact grants, and comparing them with what the code needs.

A grant is ``(group, resource, verb)`` or ``("", url, verb)`` for a non-resource URL, the same
shape as :attr:`llm_d_lens.incluster.access.Access.grant`. Wildcards are refused rather than
expanded: "``*``" is exactly what a least-privilege role must never say.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llm_d_lens.incluster.access import Access
from llm_d_lens.incluster.errors import RoleInvalid

Grant = tuple[str, str, str]


def role_named(objects: Iterable[Mapping[str, Any]], name: str) -> Mapping[str, Any]:
    """The ClusterRole ``name`` among rendered objects."""
    for obj in objects:
        if obj.get("kind") == "ClusterRole" and (obj.get("metadata") or {}).get("name") == name:
            return obj
    raise RoleInvalid(f"no ClusterRole named {name!r} in the rendered objects", details={"role": name})


def grants_of(role: Mapping[str, Any]) -> set[Grant]:
    """Every grant of a ClusterRole's rules, each rule multiplied out; a wildcard is an error."""
    name = (role.get("metadata") or {}).get("name", "?")
    grants: set[Grant] = set()
    for index, rule in enumerate(role.get("rules") or []):
        where = f"ClusterRole {name} rules[{index}]"
        verbs = _strings(rule, "verbs", where)
        urls = rule.get("nonResourceURLs")
        if urls is not None:
            grants |= {("", url, verb) for url in _strings(rule, "nonResourceURLs", where) for verb in verbs}
            continue
        if rule.get("resourceNames"):
            raise RoleInvalid(f"{where} limits resourceNames, which the proof does not model", details={"rule": rule})
        groups = _strings(rule, "apiGroups", where, allow_empty_item=True)
        resources = _strings(rule, "resources", where)
        grants |= {(g, r, v) for g in groups for r in resources for v in verbs}
    return grants


def _strings(rule: Mapping[str, Any], key: str, where: str, *, allow_empty_item: bool = False) -> list[str]:
    values = rule.get(key)
    if not isinstance(values, list) or not values:
        raise RoleInvalid(f"{where}.{key} must be a non-empty list, not {values!r}", details={"field": key})
    for value in values:
        if not isinstance(value, str) or (not value and not allow_empty_item):
            raise RoleInvalid(f"{where}.{key} has {value!r}, not a name", details={"field": key})
        if "*" in value:
            raise RoleInvalid(f"{where}.{key} has the wildcard {value!r}: name what is needed instead",
                              details={"field": key, "value": value})
    return list(values)


@dataclass(frozen=True)
class Comparison:
    """What a role lacks (needed, not granted) and what it grants beyond need."""

    missing: dict[Grant, list[str]]
    extra: set[Grant]

    @property
    def exact(self) -> bool:
        return not self.missing and not self.extra

    def report(self, role: str) -> str:
        lines = [f"ClusterRole {role}:"]
        for grant, by in sorted(self.missing.items()):
            lines.append(f"  missing {_show(grant)}, needed by: {'; '.join(sorted(set(by))[:3])}")
        for grant in sorted(self.extra):
            lines.append(f"  grants {_show(grant)}, which no call needs")
        return "\n".join(lines)


def compare(needed: Mapping[Grant, Sequence[str]], granted: set[Grant]) -> Comparison:
    """``needed`` maps each grant to the commands that need it, so a failure names the caller."""
    missing = {grant: list(by) for grant, by in needed.items() if grant not in granted}
    return Comparison(missing, granted - set(needed))


def needed_by(calls: Iterable[tuple[str, Iterable[Access]]]) -> dict[Grant, list[str]]:
    """Group (command, accesses) pairs into grant -> commands."""
    out: dict[Grant, list[str]] = {}
    for command, accesses in calls:
        for access in accesses:
            out.setdefault(access.grant, []).append(command)
    return out


def _show(grant: Grant) -> str:
    group, resource, verb = grant
    if resource.startswith("/"):
        return f"{verb} {resource}"
    return f"{verb} {resource} (apiGroup {group!r})"
