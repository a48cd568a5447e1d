"""Finds every hardware profile and provider: bundled JSON plus two entry-point groups.

One path for built-ins and plugins alike. A plugin that fails to import, to load or to validate
is recorded as a :class:`LoadFailure` and the others carry on; an identity conflict between two
profiles is not isolated but raised, since registering either would silently shadow the other.
Provider entry points are only recorded here: they are imported on first use (``registry.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from importlib.resources import files
from typing import Any

from llm_d_lens.errors import LensError
from llm_d_lens.hardware.errors import ProfileInvalid, ProfileOrigin
from llm_d_lens.hardware.loader import validate_payload
from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.hardware.settings import OWN_DISTRIBUTION, PluginSettings, normalize_dist

PROFILES_GROUP = "llm_d_lens.hardware.profiles"
PROVIDERS_GROUP = "llm_d_lens.hardware.providers"


@dataclass(frozen=True)
class LoadFailure:
    """A plugin (or bundled file) that could not be registered, and why."""

    group: str
    name: str  # entry-point name, or the bundled file name
    distribution: str
    reason: str
    profile_id: str | None = None

    def __str__(self) -> str:
        return f"{self.group}: {self.name!r} from {self.distribution}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "name": self.name, "distribution": self.distribution,
                "reason": self.reason, "profile_id": self.profile_id}


@dataclass
class DiscoveredProfile:
    profile: HardwareProfile
    canonical: str  # the payload as sorted JSON: identical content is the same profile
    origins: list[ProfileOrigin]


@dataclass(frozen=True)
class ProviderRef:
    """A provider entry point, not yet imported."""

    profile_id: str
    entry_point: EntryPoint
    origin: ProfileOrigin


@dataclass
class Discovery:
    profiles: list[DiscoveredProfile] = field(default_factory=list)
    providers: dict[str, ProviderRef] = field(default_factory=dict)
    failures: list[LoadFailure] = field(default_factory=list)
    skipped: list[LoadFailure] = field(default_factory=list)


def _dist_label(ep: EntryPoint) -> str:
    dist = ep.dist
    if dist is None:
        return "an unknown distribution"
    return f"{dist.name} {dist.version}"


def _dist_name(ep: EntryPoint) -> str:
    return ep.dist.name if ep.dist is not None else ""


def canonical(payload: Any) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"))


def _bundled_payloads() -> list[tuple[str, Any, ProfileOrigin]]:
    out = []
    folder = files("llm_d_lens.hardware").joinpath("profiles")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".json"):
            continue
        origin = ProfileOrigin("bundled", f"llm_d_lens/hardware/profiles/{entry.name}")
        out.append((entry.name, entry.read_text(encoding="utf-8"), origin))
    return out


def discover(
    settings: PluginSettings | None = None,
    *,
    profile_entry_points: list[EntryPoint] | None = None,
    provider_entry_points: list[EntryPoint] | None = None,
    include_bundled: bool = True,
) -> Discovery:
    """Everything registrable, validated, de-duplicated; conflicts are left to the registry."""
    settings = settings or PluginSettings.from_env()
    if profile_entry_points is None:
        profile_entry_points = list(entry_points(group=PROFILES_GROUP))
    if provider_entry_points is None:
        provider_entry_points = list(entry_points(group=PROVIDERS_GROUP))
    found = Discovery()
    by_id: dict[str, DiscoveredProfile] = {}
    validated: dict[str, HardwareProfile] = {}  # canonical payload -> profile: a built-in's entry
    # point returns its bundled JSON again, and checking it twice would double the startup cost

    def check(payload: Any, source: str) -> HardwareProfile:
        key = canonical(payload)
        if key not in validated:
            validated[key] = validate_payload(payload, source)
        return validated[key]

    def admit(profile: HardwareProfile, payload: Any, origin: ProfileOrigin) -> None:
        text = canonical(payload)
        seen = by_id.get(profile.id)
        if seen is not None and seen.canonical == text:
            seen.origins.append(origin)  # the same payload seen twice is one profile
            return
        entry = DiscoveredProfile(profile, text, [origin])
        found.profiles.append(entry)
        by_id.setdefault(profile.id, entry)

    if include_bundled:
        for name, text, origin in _bundled_payloads():
            try:
                payload = json.loads(text)
                profile = check(payload, str(origin))
            except (ValueError, LensError) as exc:
                found.failures.append(LoadFailure("bundled", name, OWN_DISTRIBUTION, str(exc)))
                continue
            if profile.id in settings.block:
                found.skipped.append(LoadFailure("bundled", name, OWN_DISTRIBUTION, "blocked by LENS_PROFILES_BLOCK", profile.id))
                continue
            admit(profile, payload, origin)

    for ep in sorted(profile_entry_points, key=lambda e: (normalize_dist(_dist_name(e)), e.name)):
        origin = ProfileOrigin("entry-point", _dist_label(ep), ep.name)
        allowed, why = settings.admits_distribution(_dist_name(ep))
        if not allowed:
            found.skipped.append(LoadFailure(PROFILES_GROUP, ep.name, _dist_label(ep), why, ep.name))
            continue
        if ep.name in settings.block:
            found.skipped.append(LoadFailure(PROFILES_GROUP, ep.name, _dist_label(ep), "blocked by LENS_PROFILES_BLOCK", ep.name))
            continue
        try:
            loaded = _load_entry_point_profiles(ep, str(origin), check)
        except _PluginError as exc:
            found.failures.append(LoadFailure(PROFILES_GROUP, ep.name, _dist_label(ep), str(exc), ep.name))
            continue
        for profile, payload in loaded:
            if profile.id not in settings.block:
                admit(profile, payload, origin)

    for ep in sorted(provider_entry_points, key=lambda e: (normalize_dist(_dist_name(e)), e.name)):
        origin = ProfileOrigin("entry-point", _dist_label(ep), ep.name)
        allowed, why = settings.admits_distribution(_dist_name(ep))
        if not allowed or ep.name in settings.block:
            found.skipped.append(LoadFailure(PROVIDERS_GROUP, ep.name, _dist_label(ep), why or "blocked by LENS_PROFILES_BLOCK", ep.name))
            continue
        if ep.name not in by_id:
            found.failures.append(LoadFailure(
                PROVIDERS_GROUP, ep.name, _dist_label(ep), f"provider for {ep.name!r}, but no profile with that id is registered", ep.name
            ))
            continue
        if ep.name in found.providers:
            first = found.providers[ep.name].origin
            found.failures.append(LoadFailure(
                PROVIDERS_GROUP, ep.name, _dist_label(ep), f"provider for {ep.name!r} already registered by {first}", ep.name
            ))
            continue
        found.providers[ep.name] = ProviderRef(ep.name, ep, origin)
    return found


class _PluginError(Exception):
    pass


def _load_entry_point_profiles(
    ep: EntryPoint, source: str, check: Callable[[Any, str], HardwareProfile]
) -> list[tuple[HardwareProfile, Any]]:
    try:
        target = ep.load()
    except Exception as exc:  # a plugin's import may raise anything; it must not stop the others
        raise _PluginError(f"import of {ep.value} failed: {type(exc).__name__}: {exc}") from None
    if not callable(target):
        raise _PluginError(f"{ep.value} is not callable; it must be a load_profiles() returning a list of profiles")
    try:
        payloads = target()
    except Exception as exc:
        raise _PluginError(f"{ep.value}() failed: {type(exc).__name__}: {exc}") from None
    if isinstance(payloads, dict):
        payloads = [payloads]
    if not isinstance(payloads, (list, tuple)) or not payloads:
        raise _PluginError(f"{ep.value}() must return a non-empty list of profile objects, got {type(payloads).__name__}")
    loaded = []
    for payload in payloads:
        try:
            loaded.append((check(payload, source), payload))
        except ProfileInvalid as exc:
            raise _PluginError(str(exc)) from None
    ids = [profile.id for profile, _ in loaded]
    if ep.name not in ids:
        raise _PluginError(f"entry point name {ep.name!r} must equal a profile id it returns (got {', '.join(ids)})")
    return loaded
