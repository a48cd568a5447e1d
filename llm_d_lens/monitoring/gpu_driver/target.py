"""What one install means: a profile's driver mode turned into a release, a chart ref and values.

Everything a user can get wrong about a mode (an unknown name, a mode Lens does not manage, an
option that cannot be passed) is found here, before a single command runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from llm_d_lens.hardware.models import DriverMode, DriverRelease, HardwareProfile, Prerequisite
from llm_d_lens.hardware.rules import HELM_VALUE_KEY
from llm_d_lens.monitoring.gpu_driver.errors import AccessModeUnknown, DriverNotManaged, DriverOptionInvalid

DEFAULT_NAMESPACE = "default"
_REF_PARAM = re.compile(r"[?&]ref=([^&]+)")


@dataclass(frozen=True)
class DriverTarget:
    """One mode of one hardware, resolved: everything the installer and the plan need."""

    profile_id: str
    mode_name: str
    mode: DriverRelease  # the DriverMode itself, or one of its prerequisites
    installer: str  # "helm" | "kustomize"
    options: dict[str, Any] = field(default_factory=dict)  # profile options, then the user's on top
    prerequisite: bool = False  # installed before the mode's own chart; the mode is mode_name

    @property
    def prerequisites(self) -> list[DriverTarget]:
        """The charts to install first, in order; each with the profile's options only (the user's go to the mode)."""
        if not isinstance(self.mode, DriverMode):
            return []
        return [DriverTarget(self.profile_id, self.mode_name, before, self.installer, dict(before.options), True)
                for before in self.mode.prerequisites]

    @property
    def preconditions(self) -> list[str]:
        return list(self.mode.preconditions) if isinstance(self.mode, Prerequisite) else []

    @property
    def release(self) -> str:
        return self.mode.release_name or self.chart_name

    @property
    def namespace(self) -> str:
        return self.mode.namespace or DEFAULT_NAMESPACE

    @property
    def chart_name(self) -> str:
        """The chart's own name: the last path segment of manifest_ref (``helm list`` prefixes versions with it)."""
        return self.mode.manifest_ref.rstrip("/").rsplit("/", 1)[-1]

    @property
    def version(self) -> str | None:
        """The pinned version: the chart version, or a kustomize ref's ``?ref=``."""
        if self.mode.chart_version:
            return self.mode.chart_version
        found = _REF_PARAM.search(self.mode.manifest_ref)
        return found.group(1) if found else None

    @property
    def key(self) -> tuple[str, str]:
        """Where the install lands; two targets with one key are one release."""
        return (self.namespace, self.release) if self.installer == "helm" else ("", self.mode.manifest_ref)

    def describe(self) -> dict[str, Any]:
        return {
            "hardware": self.profile_id,
            "mode": self.mode_name,
            "installer": self.installer,
            "release": self.release if self.installer == "helm" else None,
            "namespace": self.namespace if self.installer == "helm" else None,
            "chart": self.mode.manifest_ref,
            "repo": self.mode.repo,
            "version": self.version,
            "min_kubernetes_version": self.mode.min_kubernetes_version,
            "prerequisite": self.prerequisite,
            "preconditions": self.preconditions,
        }


def resolve_mode_name(profile: HardwareProfile, mode_name: str | None) -> str:
    """The named access mode, or the profile's first; an unknown name is an error naming the known ones."""
    if mode_name is None:
        return profile.access_modes[0]
    if mode_name not in profile.access_modes:
        known = ", ".join(profile.access_modes)
        raise AccessModeUnknown(
            f"hardware {profile.id!r} has no access mode {mode_name!r}; its access modes are: {known}",
            details={"hardware": profile.id, "mode": mode_name, "access_modes": list(profile.access_modes)},
        )
    return mode_name


def unmanaged_reason(profile: HardwareProfile, mode_name: str) -> str | None:
    """Why Lens installs nothing for this mode, or None when it does."""
    if profile.driver is None:
        return f"profile {profile.id!r} declares no driver: its device stack is provided outside Lens"
    if mode_name in profile.driver.unmanaged_modes:
        return profile.driver.unmanaged_modes[mode_name].reason
    return None


def resolve_target(profile: HardwareProfile, mode_name: str | None = None,
                   options: Mapping[str, Any] | None = None) -> DriverTarget:
    name = resolve_mode_name(profile, mode_name)
    reason = unmanaged_reason(profile, name)
    if reason is not None or profile.driver is None:
        raise DriverNotManaged(
            f"Lens installs nothing for {profile.id!r} mode {name!r}: {reason}",
            details={"hardware": profile.id, "mode": name, "reason": reason},
        )
    mode = profile.driver.modes[name]
    merged = dict(mode.options)
    given = dict(options or {})
    if given and profile.driver.installer != "helm":
        raise DriverOptionInvalid(
            f"{profile.id!r} mode {name!r} installs with kustomize, which takes no options "
            f"(given: {', '.join(sorted(given))})",
            details={"hardware": profile.id, "mode": name, "options": sorted(given)},
        )
    merged.update(given)
    if profile.driver.installer == "helm":
        check_options(merged, where=f"{profile.id!r} mode {name!r}")
    return DriverTarget(profile.id, name, mode, profile.driver.installer, merged)


def check_options(options: Mapping[str, Any], *, where: str) -> None:
    """Keys must be dotted value paths; values must survive JSON and an argv (no NUL byte)."""
    for key, value in options.items():
        if not isinstance(key, str) or not HELM_VALUE_KEY.match(key):
            raise DriverOptionInvalid(
                f"option {key!r} of {where}: a key is a dotted path of names such as gfd.enabled",
                details={"option": key},
            )
        try:
            encoded = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise DriverOptionInvalid(f"option {key!r} of {where}: value {value!r} is not JSON ({exc})",
                                      details={"option": key}) from None
        if "\x00" in encoded or "\\u0000" in encoded:
            raise DriverOptionInvalid(f"option {key!r} of {where}: a value may not contain a NUL byte",
                                      details={"option": key})


def nested_values(options: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted keys as the nested values helm stores (``helm get values`` prints these)."""
    tree: dict[str, Any] = {}
    for key, value in options.items():
        node = tree
        *parents, leaf = key.split(".")
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[leaf] = value
    return tree


def parse_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` from a command line: VALUE is JSON when it parses (true, 3, "x"), else the string itself."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise DriverOptionInvalid(f"option {text!r}: expected KEY=VALUE", details={"option": text})
    from llm_d_lens.jsonread import loads

    try:
        value: Any = loads(raw)  # NaN, 1e400, 5,000 digits or deep nesting are no JSON value here: the string
    except ValueError:
        value = raw
    return key, value
