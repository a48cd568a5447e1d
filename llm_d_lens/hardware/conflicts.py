"""Settles identity conflicts before the registry is built: built-ins win, rivals are both skipped.

A conflict is never a silent shadow, but it must not stop unrelated hardware either. So a
third-party profile that claims an identity a built-in owns (an alias, a device class, a DRA
driver, an overlay directory, a variant/vendor label pair, an overlapping resource prefix, or its
id with other content) is skipped and reported with both owners and the fix; two third-party
profiles that claim the same identity are both skipped, since neither is more right than the other.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import msgspec

from llm_d_lens.hardware.errors import render_value

if TYPE_CHECKING:
    from llm_d_lens.hardware.discovery import DiscoveredProfile, LoadFailure
    from llm_d_lens.hardware.models import HardwareProfile


#: the JSON path of each identity field, for reports that point into the profile
FIELD_PATHS = {
    "id": "$.id", "accelerator key": "$.accelerator_keys", "device class": "$.device_classes",
    "DRA driver": "$.inventory.dra_drivers", "upstream overlay directory": "$.upstream_variant",
    "upstream variant/vendor label pair": "$.upstream_labels", "resource prefix": "$.resource_prefixes",
}


def alias_names(profile: HardwareProfile) -> list[str]:
    """Every name an explicit lookup accepts for this profile (the registry's alias index)."""
    names = list(profile.aliases)
    for mode in profile.effective_modes().values():
        for name in (mode.benchmark_profile, *mode.benchmark_profiles_by_resource.values()):
            if name and name not in names:
                names.append(name)
    return names


def exact_claims(profile: HardwareProfile) -> Iterator[tuple[str, Any]]:
    """(field, value) pairs no two profiles may share; resource prefixes are checked apart."""
    for alias in alias_names(profile):
        yield "accelerator key", alias.lower()
    for cls in profile.device_classes:
        yield "device class", cls
    for driver in profile.inventory.dra_drivers:
        yield "DRA driver", driver
    for directory in profile.overlay_dirs:
        yield "upstream overlay directory", directory
    for pair in profile.label_pairs:
        yield "upstream variant/vendor label pair", tuple(pair)


def prefixes_overlap(a: str, b: str) -> bool:
    return a.startswith(b) or b.startswith(a)


class Clash(msgspec.Struct, frozen=True):
    field: str
    value: Any
    first: DiscoveredProfile
    second: DiscoveredProfile


def _first_clash(entry: DiscoveredProfile, owners: dict[tuple[str, Any], DiscoveredProfile],
                 prefixes: list[tuple[str, DiscoveredProfile]]) -> Clash | None:
    for claim in exact_claims(entry.profile):
        owner = owners.get(claim)
        if owner is not None and owner.profile.id != entry.profile.id:
            return Clash(claim[0], claim[1], owner, entry)
    for prefix in entry.profile.resource_prefixes:
        for other, owner in prefixes:
            if owner.profile.id != entry.profile.id and prefixes_overlap(prefix, other):
                return Clash("resource prefix", [other, prefix] if other != prefix else prefix, owner, entry)
    return None


def all_clashes(entry: DiscoveredProfile, others: list[DiscoveredProfile]) -> list[Clash]:
    """Every identity ``entry`` shares with ``others`` (not only the first): ``lens hardware validate``
    reports them all in one run."""
    owners, prefixes = _index([other for other in others if other.profile.id != entry.profile.id])
    found: list[Clash] = []
    for claim in dict.fromkeys(exact_claims(entry.profile)):
        owner = owners.get(claim)
        if owner is not None:
            found.append(Clash(claim[0], claim[1], owner, entry))
    for prefix in entry.profile.resource_prefixes:
        for other, owner in prefixes:
            if prefixes_overlap(prefix, other):
                found.append(Clash("resource prefix", [other, prefix] if other != prefix else prefix, owner, entry))
    return found


def _index(entries: list[DiscoveredProfile]) -> tuple[dict[tuple[str, Any], DiscoveredProfile], list[tuple[str, DiscoveredProfile]]]:
    owners: dict[tuple[str, Any], DiscoveredProfile] = {}
    prefixes: list[tuple[str, DiscoveredProfile]] = []
    for entry in entries:
        for claim in exact_claims(entry.profile):
            owners.setdefault(claim, entry)
        prefixes += [(p, entry) for p in entry.profile.resource_prefixes]
    return owners, prefixes


def settle(builtins: list[DiscoveredProfile], others: list[DiscoveredProfile]
           ) -> tuple[list[DiscoveredProfile], list[LoadFailure]]:
    """The third-party profiles that may be registered beside the built-ins, and a report per skip."""
    by_id = {entry.profile.id: entry for entry in builtins}
    owners, prefixes = _index(builtins)
    failures: list[LoadFailure] = []
    contenders: list[DiscoveredProfile] = []
    for entry in others:
        same = by_id.get(entry.profile.id)
        clash = Clash("id", entry.profile.id, same, entry) if same is not None else _first_clash(entry, owners, prefixes)
        if clash is None:
            contenders.append(entry)
            continue
        failures.append(_report(clash, entry, builtin_wins=True))

    # among third parties: every profile involved in a clash is skipped, each with one report.
    # Claims are computed once and indexed, so this stays linear in the number of plugins.
    claims = [list(exact_claims(entry.profile)) for entry in contenders]
    holders: dict[tuple[str, Any], list[int]] = {}
    for i, entry in enumerate(contenders):
        holders.setdefault(("id", entry.profile.id), []).append(i)
        for claim in claims[i]:
            holders.setdefault(claim, []).append(i)
    by_prefix = PrefixIndex()
    for i, entry in enumerate(contenders):
        for prefix in entry.profile.resource_prefixes:
            by_prefix.add(prefix, i)
    clashes: dict[int, Clash] = {}
    for i, entry in enumerate(contenders):
        for claim in [("id", entry.profile.id), *claims[i]]:
            rivals = [j for j in holders[claim] if j != i and (claim[0] == "id" or
                                                              contenders[j].profile.id != entry.profile.id)]
            if rivals:
                clashes[i] = Clash(claim[0], claim[1], contenders[rivals[0]], entry)
                break
        if i in clashes:
            continue
        for prefix in entry.profile.resource_prefixes:
            for other, j in by_prefix.overlapping(prefix):
                if j != i and contenders[j].profile.id != entry.profile.id:
                    clashes[i] = Clash("resource prefix", [other, prefix] if other != prefix else prefix, contenders[j], entry)
                    break
            if i in clashes:
                break
    admitted = [entry for i, entry in enumerate(contenders) if i not in clashes]
    failures += [_report(clashes[i], contenders[i], builtin_wins=False) for i in sorted(clashes)]
    return admitted, failures


class PrefixIndex:
    """Resource prefixes and who holds each, answering which overlap a given one without comparing
    it with every other: those it starts with are its own prefixes (one lookup per length), those
    starting with it sit together in sorted order. Ten thousand prefixes in one domain cost
    milliseconds, not 10⁸ comparisons."""

    def __init__(self) -> None:
        self._holders: dict[str, list[int]] = {}
        self._sorted: list[str] | None = None

    def add(self, prefix: str, holder: int) -> None:
        self._holders.setdefault(prefix, []).append(holder)
        self._sorted = None

    def overlapping(self, prefix: str) -> Iterator[tuple[str, int]]:
        """(prefix, holder) for every held prefix that starts ``prefix`` or that ``prefix`` starts."""
        import bisect

        if self._sorted is None:
            self._sorted = sorted(self._holders)
        for end in range(1, len(prefix)):
            for holder in self._holders.get(prefix[:end], ()):
                yield prefix[:end], holder
        keys = self._sorted
        at = bisect.bisect_left(keys, prefix)
        while at < len(keys) and keys[at].startswith(prefix):
            for holder in self._holders[keys[at]]:
                yield keys[at], holder
            at += 1


def _where(entry: DiscoveredProfile) -> str:
    return ", ".join(str(o) for o in entry.origins)


def _report(clash: Clash, skipped: DiscoveredProfile, *, builtin_wins: bool) -> LoadFailure:
    from llm_d_lens.hardware.discovery import PROFILES_GROUP, LoadFailure

    owner = clash.first  # the one that keeps (a built-in) or shares (a rival) the identity
    value = list(clash.value) if isinstance(clash.value, tuple) else clash.value
    pid = skipped.profile.id
    if builtin_wins:
        outcome = f"the built-in wins and profile {pid!r} is skipped"
        fix = (f"remove or fix the plugin that ships {pid!r}; to keep it out without this report, set "
               f"LENS_PROFILES_BLOCK={pid}")
    else:
        outcome = "both are skipped, since neither is built-in"
        fix = (f"uninstall one of the two plugins, or set LENS_PROFILES_BLOCK={owner.profile.id} (or {pid}) "
               "to keep the other")
    kind = "built-in profile" if builtin_wins else "profile"
    reason = (f"registration conflict: {clash.field} {render_value(value)} is claimed by {kind} "
              f"{owner.profile.id!r} ({_where(owner)}) and by profile {pid!r} ({_where(skipped)}); {outcome}. "
              f"Fix: {fix}")
    origin = skipped.origins[0]
    return LoadFailure(PROFILES_GROUP, origin.entry_point or pid, origin.location, reason, pid, kind="conflict",
                       details={"field": clash.field, "path": FIELD_PATHS[clash.field], "value": value, "fix": fix,
                                "owners": [{"id": owner.profile.id, "from": _where(owner)},
                                           {"id": pid, "from": _where(skipped)}]})
