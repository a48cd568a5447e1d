"""Resolution: from something a cluster, an overlay or a user names, to a registered profile.

Two kinds of question, two behaviours:

* explicit (a user typed a name): :meth:`Resolver.require` raises ``ACCELERATOR_NOT_REGISTERED``
  with the nearest names;
* observed (a resource on a node, a driver in a slice, labels on an overlay): the ``match_*``
  methods return a :class:`Resolution` whose status may be ``unsupported`` — they never raise.

Every lookup goes through the registry's indexes; none scans all profiles.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import msgspec

if TYPE_CHECKING:
    from llm_d_lens.hardware.models import HardwareProfile
    from llm_d_lens.hardware.registry import Registry

VARIANT_LABEL = "llm-d.ai/accelerator-variant"
VENDOR_LABEL = "llm-d.ai/accelerator-vendor"

Status = Literal["supported", "unsupported", "ambiguous"]


class Resolution(msgspec.Struct, frozen=True):
    """The answer to one observed lookup."""

    query: str  # what kind of thing was looked up: "device_class", "resource", ...
    key: str
    status: Status
    profile_id: str | None = None
    matched_by: str | None = None  # the profile field that matched, e.g. "resource_prefixes"
    matched_value: str | None = None
    candidates: tuple[str, ...] = ()
    detail: str = ""

    @property
    def supported(self) -> bool:
        return self.status == "supported"

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query, "key": self.key, "status": self.status, "id": self.profile_id,
            "matched_by": self.matched_by, "matched_value": self.matched_value,
            "candidates": list(self.candidates), "detail": self.detail,
        }


def _process_registry() -> Registry:
    from llm_d_lens.hardware.registry import get_registry

    return get_registry()


class Resolver(msgspec.Struct, dict=True):  # a __dict__ for its cached_property
    """Lookups through a registry's indexes: the process-wide one unless given.

    Reads only ``registry.index``, ``registry.get`` and ``registry.profiles()`` (their ids,
    ``node_label_selector`` and ``planning.aic_system_patterns``).
    """

    registry: Registry = msgspec.field(default_factory=_process_registry)

    # -- explicit -----------------------------------------------------------------------------

    def require(self, key: str) -> HardwareProfile:
        """A profile by id, accelerator key, benchmark or evaluation profile; raises when unknown."""
        return self.registry.get(key)

    # -- observed -----------------------------------------------------------------------------

    def _found(self, query: str, key: str, profile_id: str, field_name: str, value: str, detail: str = "") -> Resolution:
        return Resolution(query, key, "supported", profile_id, field_name, value, (profile_id,), detail)

    def _unsupported(self, query: str, key: str, detail: str) -> Resolution:
        return Resolution(query, key, "unsupported", detail=detail)

    def match_key(self, key: str) -> Resolution:
        profile_id = self.registry.index.aliases.get(key.strip().lower())
        if profile_id is None:
            return self._unsupported("key", key, "no profile has this id, accelerator key or benchmark profile")
        return self._found("key", key, profile_id, "aliases", key)

    def match_device_class(self, device_class: str) -> Resolution:
        profile_id = self.registry.index.device_classes.get(device_class)
        if profile_id is None:
            return self._unsupported("device_class", device_class, "no profile claims this DRA device class")
        return self._found("device_class", device_class, profile_id, "device_classes", device_class)

    def match_dra_driver(self, driver: str) -> Resolution:
        profile_id = self.registry.index.dra_drivers.get(driver)
        if profile_id is None:
            return self._unsupported("dra_driver", driver, "no profile claims this DRA driver")
        return self._found("dra_driver", driver, profile_id, "inventory.dra_drivers", driver)

    def match_resource(self, resource: str) -> Resolution:
        """An extended resource name; the longest claimed prefix wins."""
        domain = resource.split("/", 1)[0]
        for prefix, profile_id in self.registry.index.prefixes_by_domain.get(domain, ()):
            if resource.startswith(prefix):
                return self._found("resource", resource, profile_id, "resource_prefixes", prefix)
        return self._unsupported("resource", resource, "no profile claims a prefix of this resource")

    def match_upstream(self, variant: str, vendor: str) -> Resolution:
        key = f"{variant}/{vendor}"
        profile_id = self.registry.index.label_pairs.get((variant, vendor))
        if profile_id is None:
            return self._unsupported("upstream_labels", key, f"no profile declares the variant/vendor pair {variant!r}/{vendor!r}")
        return self._found("upstream_labels", key, profile_id, "upstream_labels", key)

    def match_overlay_dir(self, directory: str) -> Resolution:
        profile_id = self.registry.index.overlay_dirs.get(directory)
        if profile_id is None:
            return self._unsupported("overlay_dir", directory, "no profile owns this upstream overlay directory")
        return self._found("overlay_dir", directory, profile_id, "upstream_variant", directory)

    def match_labels(self, labels: Mapping[str, str]) -> Resolution:
        """A label set, taken together: an overlay's llm-d pair first, then node selectors."""
        key = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        variant, vendor = labels.get(VARIANT_LABEL), labels.get(VENDOR_LABEL)
        if variant is not None and vendor is not None:
            found = self.match_upstream(variant, vendor)
            return Resolution("labels", key, found.status, found.profile_id, found.matched_by, found.matched_value,
                              found.candidates, found.detail)
        if variant is not None or vendor is not None:
            missing = VENDOR_LABEL if vendor is None else VARIANT_LABEL
            owners = sorted({pid for (var, ven), pid in self.registry.index.label_pairs.items()
                             if var == variant or ven == vendor})
            if len(owners) == 1:
                return self._found("labels", key, owners[0], "upstream_labels", variant or vendor or "")
            return Resolution("labels", key, "ambiguous" if owners else "unsupported", candidates=tuple(owners),
                              detail=f"{missing} is needed to tell these apart" if owners else "no profile uses this label value")
        return self._match_selectors(key, labels)

    def _match_selectors(self, key: str, labels: Mapping[str, str]) -> Resolution:
        index = self.registry.index
        candidates: set[str] = set()
        for label, value in labels.items():
            candidates.update(index.selector_pairs.get((label, value), ()))
            candidates.update(index.selector_keys.get(label, ()))
        matched = sorted(pid for pid in candidates if _selector_matches(self.registry.get(pid).node_label_selector, labels))
        if not matched:
            return self._unsupported("labels", key, "no profile's node_label_selector matches these labels")
        if len(matched) > 1:
            return Resolution("labels", key, "ambiguous", candidates=tuple(matched),
                              detail="several profiles' node_label_selector match these labels")
        selector = self.registry.get(matched[0]).node_label_selector
        shown = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
        return self._found("labels", key, matched[0], "node_label_selector", shown)

    def match_aic_system(self, system: str) -> Resolution:
        for profile_id, pattern in self._aic_patterns:
            if pattern.search(system.strip().lower()):
                return self._found("aic_system", system, profile_id, "planning.aic_system_patterns", pattern.pattern)
        return self._unsupported("aic_system", system, "no profile's aic_system_patterns match")

    @cached_property
    def _aic_patterns(self) -> list[tuple[str, re.Pattern[str]]]:
        return [(p.id, re.compile(pattern, re.IGNORECASE)) for p in self.registry.profiles()
                for pattern in p.planning.aic_system_patterns]


def resolve_queries(resolver: Resolver, *, keys: Sequence[str] = (), device_classes: Sequence[str] = (),
                    resources: Sequence[str] = (), dra_drivers: Sequence[str] = (),
                    labels: Sequence[str] = (), parse_labels: Callable[[Sequence[str]], Mapping[str, str]] | None = None,
                    aic_systems: Sequence[str] = ()) -> list[dict[str, Any]]:
    """``lens hardware resolve``'s answers, in its order: keys (explicit, so unknown raises), then each kind.

    ``labels`` are ``KEY=VALUE`` texts, read together by ``parse_labels`` once their turn comes (so
    an unknown key is reported before a malformed label, as the command always did).
    """
    results = []
    for k in keys:
        profile = resolver.require(k)
        results.append(resolver.match_key(k).to_dict() | {"id": profile.id})
    results += [resolver.match_device_class(c).to_dict() for c in device_classes]
    results += [resolver.match_resource(r).to_dict() for r in resources]
    results += [resolver.match_dra_driver(d).to_dict() for d in dra_drivers]
    if labels:
        assert parse_labels is not None, "labels given without a parser"
        results.append(resolver.match_labels(parse_labels(labels)).to_dict())
    results += [resolver.match_aic_system(s).to_dict() for s in aic_systems]
    return results


def split_labels(items: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """``KEY=VALUE`` texts as labels (a later key wins), and the texts that are not (no ``=`` or no key)."""
    labels: dict[str, str] = {}
    malformed = []
    for item in items:
        name, sep, value = item.partition("=")
        if sep and name:
            labels[name] = value
        else:
            malformed.append(item)
    return labels, malformed


def _selector_matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(key in labels and (value == "*" or labels[key] == value) for key, value in selector.items())


def selector_matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """Whether a node's labels satisfy a profile selector (``"*"`` = the label exists)."""
    return _selector_matches(selector, labels)
