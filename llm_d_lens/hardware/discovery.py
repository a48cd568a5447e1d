"""Finds every hardware profile and provider: bundled JSON plus two entry-point groups.

One path for built-ins and plugins alike. A plugin that fails in any way (import, ``load_profiles()``,
its payload, validation, a hang, stray output) is recorded as a :class:`LoadFailure` and the others
carry on; an identity conflict is settled here too (``conflicts.py``: built-ins win, rival plugins
are both skipped), so building the registry never fails for a plugin's sake.
Provider entry points are only recorded here: they are imported on first use (``registry.py``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import msgspec

from llm_d_lens.errors import LensError
from llm_d_lens.hardware.entry_points import EntryPoint, installed
from llm_d_lens.hardware.errors import ProfileInvalid, ProfileOrigin
from llm_d_lens.hardware.isolation import dist_meta, forget_dist_meta
from llm_d_lens.hardware.loader import (
    parse_profile_text,
    validate_network_payload,
    validate_payload,
)
from llm_d_lens.hardware.models import HardwareProfile, NetworkProfile
from llm_d_lens.hardware.settings import (
    OWN_DISTRIBUTION,
    PluginSettings,
    is_own,
    normalize_dist,
)
from llm_d_lens.hardware.verdicts import Verdicts

PROFILES_GROUP = "llm_d_lens.hardware.profiles"
PROVIDERS_GROUP = "llm_d_lens.hardware.providers"
#: profiles one plugin may return; a distribution ships a handful (the largest upstream family, a dozen)
MAX_PROFILES_PER_PLUGIN = 1000
#: third-party profiles in all; past it, further plugins are refused before their payloads are checked
MAX_PROFILES = 10_000


class LoadFailure(msgspec.Struct, frozen=True, eq=False):
    """A plugin (or bundled file) that could not be registered, and why.

    ``kind`` says how it failed: import, call, payload, not-callable, output, timeout, crashed
    (while loading), invalid (schema or rules), conflict (an identity another profile owns),
    provider (a refused or broken provider), or skipped (a setting left it out).
    """

    group: str
    name: str  # entry-point name, or the bundled file name
    distribution: str
    reason: str
    profile_id: str | None = None
    kind: str = "load"
    details: dict[str, Any] | None = None  # not compared: the same failure with more detail is the same failure

    def _said(self) -> tuple[Any, ...]:
        return (self.group, self.name, self.distribution, self.reason, self.profile_id, self.kind)

    def __eq__(self, other: object) -> bool:
        return self._said() == other._said() if isinstance(other, LoadFailure) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._said())

    def __str__(self) -> str:
        return f"{self.group}: {self.name!r} from {self.distribution}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        out = {"group": self.group, "name": self.name, "distribution": self.distribution,
               "reason": self.reason, "profile_id": self.profile_id, "kind": self.kind}
        if self.details:
            out["details"] = self.details
        return out


class DiscoveredProfile(msgspec.Struct):
    profile: HardwareProfile
    canonical: str  # the payload as sorted JSON: identical content is the same profile
    origins: list[ProfileOrigin]
    #: PEP 503 names of the third-party distributions that returned it (empty for a built-in)
    distributions: set[str] = msgspec.field(default_factory=set)


class ProviderRef(msgspec.Struct, frozen=True):
    """A provider entry point, not yet imported."""

    profile_id: str
    entry_point: EntryPoint
    origin: ProfileOrigin
    #: Lens's own provider (trusted code): loaded without the child-process trial
    own: bool = False


class DiscoveredNetwork(msgspec.Struct):
    """A network device profile (``kind: network``) and where it came from."""

    profile: NetworkProfile
    canonical: str
    origins: list[ProfileOrigin]


class Discovery(msgspec.Struct):
    profiles: list[DiscoveredProfile] = msgspec.field(default_factory=list)
    network: list[DiscoveredNetwork] = msgspec.field(default_factory=list)
    providers: dict[str, ProviderRef] = msgspec.field(default_factory=dict)
    failures: list[LoadFailure] = msgspec.field(default_factory=list)
    skipped: list[LoadFailure] = msgspec.field(default_factory=list)


def _dist_label(ep: EntryPoint) -> str:
    name, version = dist_meta(ep)
    return f"{name} {version}" if name else "an unknown distribution"


def _dist_name(ep: EntryPoint) -> str:
    return dist_meta(ep)[0]


def canonical(payload: Any) -> str:
    """The payload as JSON with sorted keys: equal text is equal content (payloads are JSON documents,
    read strictly or sent by the plugin worker with ``allow_nan=False``, so no NaN stands for ``null``)."""
    return msgspec.json.encode(payload, order="sorted").decode()


def _bundled_payloads(subfolder: str = "") -> list[tuple[str, str, ProfileOrigin]]:
    """The JSON files bundled in ``profiles/`` (or its ``subfolder``), by name, as text."""
    relative = f"profiles/{subfolder}" if subfolder else "profiles"
    folder = os.path.join(os.path.dirname(__file__), *relative.split("/"))
    if not os.path.isdir(folder):
        return []
    out = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            out.append((name, handle.read(), ProfileOrigin("bundled", f"llm_d_lens/hardware/{relative}/{name}")))
    return out


def is_network_payload(payload: Any) -> bool:
    return isinstance(payload, dict) and payload.get("kind") == "network"


def _admit_network(found: Discovery, profile: NetworkProfile, payload: Any, origin: ProfileOrigin, name: str) -> None:
    """Built-ins first; a later profile reusing an id, resource name, driver or class of another is a conflict."""
    text = canonical(payload)
    claims = {("resource", n) for n in profile.resource_names} | {("driver", d) for d in profile.dra_drivers} | {
        ("device class", c) for c in profile.device_classes}
    for entry in found.network:
        if entry.profile.id == profile.id and entry.canonical == text:
            entry.origins.append(origin)
            return
        other = entry.profile
        taken = {("resource", n) for n in other.resource_names} | {("driver", d) for d in other.dra_drivers} | {
            ("device class", c) for c in other.device_classes}
        clash = sorted(claims & taken)
        if other.id == profile.id or clash:
            what = f"id {profile.id!r}" if other.id == profile.id else f"{clash[0][0]} {clash[0][1]!r}"
            found.failures.append(LoadFailure(PROFILES_GROUP, name, str(origin), f"network profile {profile.id!r} claims the {what} of {other.id!r} "
                                              f"({', '.join(str(o) for o in entry.origins)})", profile.id, kind="conflict"))
            return
    found.network.append(DiscoveredNetwork(profile, text, [origin]))


def discover(
    settings: PluginSettings | None = None,
    *,
    profile_entry_points: list[EntryPoint] | None = None,
    provider_entry_points: list[EntryPoint] | None = None,
    include_bundled: bool = True,
    use_cache: bool = True,
) -> Discovery:
    """Everything registrable, validated, de-duplicated and with its identity conflicts settled.

    Built-in payloads (bundled JSON, and Lens's own entry points) load in this process; every
    third-party entry point loads in a child process (``isolation.py``), so a plugin can fail in
    any way and is only ever skipped and reported. ``use_cache=False`` reloads every plugin.
    """
    settings = settings or PluginSettings.from_env()
    forget_dist_meta()  # name and version read once per discovery: each read parses METADATA
    if profile_entry_points is None or provider_entry_points is None:
        # one pass over the installed distributions for both groups
        groups = installed((PROFILES_GROUP, PROVIDERS_GROUP))
        if profile_entry_points is None:
            profile_entry_points = groups[PROFILES_GROUP]
        if provider_entry_points is None:
            provider_entry_points = groups[PROVIDERS_GROUP]
    found = Discovery()
    builtins: list[DiscoveredProfile] = []
    others: list[DiscoveredProfile] = []
    validated: dict[str, HardwareProfile] = {}  # canonical payload -> profile: a built-in's entry
    # point returns its bundled JSON again, and checking it twice would double the startup cost
    texts: dict[int, tuple[Any, str]] = {}  # id(payload) -> (payload, kept alive so the id stays its own; its canonical text)
    # (id, canonical text) -> the profile admitted with it: a lookup, not a comparison with every
    # profile so far (10,000 profiles from one plugin took 49 s that way)
    admitted: dict[tuple[str, str], tuple[DiscoveredProfile, bool]] = {}

    verdicts = Verdicts.load(enabled=use_cache)

    def check(payload: Any, source: str) -> Any:
        """The payload's profile (accelerator or network), checked once per content: a stored pass only decodes."""
        key = texts.setdefault(id(payload), (payload, canonical(payload)))[1]
        if key not in validated:
            network = is_network_payload(payload)
            if verdicts.has_passed(key):
                validated[key] = NetworkProfile.decode(payload) if network else HardwareProfile.decode(payload)
            else:
                validated[key] = validate_network_payload(payload, source) if network else validate_payload(payload, source)
                verdicts.record_pass(key)
        return validated[key]

    def admit(into: list[DiscoveredProfile], profile: HardwareProfile, payload: Any, origin: ProfileOrigin,
              dist: str | None) -> None:
        text = texts[id(payload)][1] if id(payload) in texts else canonical(payload)
        seen = admitted.get((profile.id, text))
        if seen is not None:
            entry, third_party = seen
            entry.origins.append(origin)  # the same payload seen twice is one profile
            if dist and third_party:
                entry.distributions.add(dist)
            return
        entry = DiscoveredProfile(profile, text, [origin], {dist} if dist else set())
        admitted[(profile.id, text)] = (entry, into is others)
        into.append(entry)

    if include_bundled:
        for name, text, origin in _bundled_payloads():
            try:
                payload = parse_profile_text(text, str(origin))
                profile = check(payload, str(origin))
            except (ValueError, LensError) as exc:
                found.failures.append(LoadFailure("bundled", name, OWN_DISTRIBUTION, str(exc), kind="invalid"))
                continue
            if settings.blocks(profile.id):
                found.skipped.append(LoadFailure("bundled", name, OWN_DISTRIBUTION, "blocked by LENS_PROFILES_BLOCK",
                                                 profile.id, kind="skipped"))
                continue
            admit(builtins, profile, payload, origin, None)

        for name, text, origin in _bundled_payloads("network"):
            try:
                payload = parse_profile_text(text, str(origin))
                network = check(payload, str(origin))
            except (ValueError, LensError) as exc:
                found.failures.append(LoadFailure("bundled", name, OWN_DISTRIBUTION, str(exc), kind="invalid"))
                continue
            if not settings.blocks(network.id):
                _admit_network(found, network, payload, origin, name)

    third_party: list[EntryPoint] = []
    for ep in sorted(profile_entry_points, key=lambda e: (normalize_dist(_dist_name(e)), e.name)):
        origin = ProfileOrigin("entry-point", _dist_label(ep), ep.name)
        own = is_own(_dist_name(ep), ep.value)
        allowed, why = (True, "") if own else settings.admits_distribution(_dist_name(ep))
        if not allowed:
            found.skipped.append(LoadFailure(PROFILES_GROUP, ep.name, _dist_label(ep), why, ep.name, kind="skipped"))
            continue
        if settings.blocks(ep.name):
            found.skipped.append(LoadFailure(PROFILES_GROUP, ep.name, _dist_label(ep), "blocked by LENS_PROFILES_BLOCK",
                                             ep.name, kind="skipped"))
            continue
        if not own:
            third_party.append(ep)
            continue
        try:
            loaded = _accept(ep, _call_in_process(ep), str(origin), check)
        except _PluginError as exc:
            found.failures.append(LoadFailure(PROFILES_GROUP, ep.name, _dist_label(ep), str(exc), ep.name, kind=exc.kind))
            continue
        for profile, payload in loaded:
            if isinstance(profile, NetworkProfile):
                if not settings.blocks(profile.id):
                    _admit_network(found, profile, payload, origin, ep.name)
            elif not settings.blocks(profile.id):
                admit(builtins, profile, payload, origin, None)

    from llm_d_lens.hardware.isolation import load_entry_points

    total = 0
    for ep, outcome in zip(third_party, load_entry_points(third_party, use_cache=use_cache)):
        origin = ProfileOrigin("entry-point", _dist_label(ep), ep.name)
        try:
            if outcome.error is not None:
                raise _PluginError(outcome.error, outcome.kind or "load")
            count = len(outcome.payloads) if isinstance(outcome.payloads, (list, tuple)) else 1
            if total + count > MAX_PROFILES:
                raise _PluginError(f"{ep.value}() returned {count} profiles, which would take the third-party "
                                   f"profiles past {MAX_PROFILES}; refused unchecked", "payload")
            loaded = _accept(ep, outcome.payloads, str(origin), check)
            total += count
        except _PluginError as exc:
            found.failures.append(LoadFailure(PROFILES_GROUP, ep.name, _dist_label(ep), str(exc), ep.name, kind=exc.kind))
            continue
        for profile, payload in loaded:
            if isinstance(profile, NetworkProfile):
                if not settings.blocks(profile.id):
                    _admit_network(found, profile, payload, origin, ep.name)
            elif not settings.blocks(profile.id):
                admit(others, profile, payload, origin, normalize_dist(_dist_name(ep)))

    from llm_d_lens.hardware.conflicts import settle

    verdicts.save()
    admitted, conflicts = settle(builtins, others)
    found.profiles = [*builtins, *admitted]
    found.failures += conflicts
    _admit_providers(found, provider_entry_points, settings, {e.profile.id: e for e in found.profiles},
                     {f.profile_id for f in conflicts})
    return found


def _admit_providers(found: Discovery, provider_entry_points: list[EntryPoint], settings: PluginSettings,
                     by_id: dict[str, DiscoveredProfile], conflicted: set[str | None]) -> None:
    """A provider is recorded only when the distribution that ships its profile declares it (seed §4)."""
    for ep in sorted(provider_entry_points, key=lambda e: (normalize_dist(_dist_name(e)), e.name)):
        origin = ProfileOrigin("entry-point", _dist_label(ep), ep.name)
        own = is_own(_dist_name(ep), ep.value)
        allowed, why = (True, "") if own else settings.admits_distribution(_dist_name(ep))
        if not allowed or settings.blocks(ep.name):
            found.skipped.append(LoadFailure(PROVIDERS_GROUP, ep.name, _dist_label(ep), why or "blocked by LENS_PROFILES_BLOCK",
                                             ep.name, kind="skipped"))
            continue

        def refuse(reason: str) -> None:
            found.failures.append(LoadFailure(PROVIDERS_GROUP, ep.name, _dist_label(ep), reason, ep.name, kind="provider"))

        entry = by_id.get(ep.name)
        if entry is None:
            if ep.name in conflicted:
                continue  # its profile was skipped for a conflict, already reported
            refuse(f"provider for {ep.name!r}, but no profile with that id is registered")
            continue
        if own != (not entry.distributions):
            owner = "Lens itself (built-in)" if not entry.distributions else ", ".join(sorted(entry.distributions))
            refuse(f"provider for {ep.name!r} refused: that profile is declared by {owner}, and only the distribution "
                   "that declares a profile may declare its provider")
            continue
        if not own and normalize_dist(_dist_name(ep)) not in entry.distributions:
            refuse(f"provider for {ep.name!r} refused: that profile is declared by {', '.join(sorted(entry.distributions))}, "
                   "and only the distribution that declares a profile may declare its provider")
            continue
        if ep.name in found.providers:
            first = found.providers[ep.name].origin
            refuse(f"provider for {ep.name!r} already registered by {first}")
            continue
        found.providers[ep.name] = ProviderRef(ep.name, ep, origin, own=own)


class _PluginError(Exception):
    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind


def _call_in_process(ep: EntryPoint) -> Any:
    """Lens's own ``load_profiles`` (trusted code): loaded here, no child process needed."""
    try:
        target = ep.load()
        if not callable(target):
            raise _PluginError(f"{ep.value} is not callable; it must be a load_profiles() returning a list of profiles",
                               "not-callable")
        return target()
    except _PluginError:
        raise
    except Exception as exc:
        raise _PluginError(f"{ep.value} failed: {type(exc).__name__}: {exc}", "call") from None


def _accept(ep: EntryPoint, payloads: Any, source: str, check: Callable[[Any, str], Any]
            ) -> list[tuple[HardwareProfile, Any]]:
    """Validate what an entry point returned: profile objects, one of them named like the entry point."""
    if isinstance(payloads, dict):
        payloads = [payloads]
    if not isinstance(payloads, (list, tuple)) or not payloads:
        raise _PluginError(f"{ep.value}() must return a non-empty list of profile objects, got {type(payloads).__name__}",
                           "payload")
    if len(payloads) > MAX_PROFILES_PER_PLUGIN:
        raise _PluginError(f"{ep.value}() returned {len(payloads)} profiles, more than the {MAX_PROFILES_PER_PLUGIN} "
                           "one plugin may register; refused unchecked", "payload")
    loaded: list[tuple[Any, Any]] = []
    for payload in payloads:
        try:
            loaded.append((check(payload, source), payload))
        except ProfileInvalid as exc:
            raise _PluginError(str(exc), "invalid") from None
    ids = [profile.id for profile, _ in loaded]
    if ep.name not in ids:
        raise _PluginError(f"entry point name {ep.name!r} must equal a profile id it returns (got {', '.join(ids)})",
                           "invalid")
    return loaded
