"""The registry: every registered profile, indexed by each name and identity a domain looks up.

Built once per process from :func:`discovery.discover`. Building it is where identity conflicts
fail fast: two profiles claiming the same device class, DRA driver, overlapping resource prefix,
alias, overlay directory or upstream label pair can't both be registered without one shadowing
the other.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable
from typing import Any

import msgspec

from llm_d_lens.hardware.digest import blake2b
from llm_d_lens.hardware.discovery import (
    DiscoveredProfile,
    Discovery,
    LoadFailure,
    ProviderRef,
    discover,
)
from llm_d_lens.hardware.errors import (
    AcceleratorNotRegistered,
    AlreadyRegistered,
    PluginLoadFailed,
    ProfileOrigin,
    RegistrationConflict,
)
from llm_d_lens.hardware.models import HardwareProfile, NetworkProfile
from llm_d_lens.hardware.settings import PluginSettings


class IdentityIndex(msgspec.Struct):
    """Exact-match indexes, each value a profile id. Filled with conflict checks."""

    aliases: dict[str, str] = msgspec.field(default_factory=dict)  # lower-cased name -> id
    device_classes: dict[str, str] = msgspec.field(default_factory=dict)
    dra_drivers: dict[str, str] = msgspec.field(default_factory=dict)
    overlay_dirs: dict[str, str] = msgspec.field(default_factory=dict)
    label_pairs: dict[tuple[str, str], str] = msgspec.field(default_factory=dict)
    # resource prefixes grouped by domain (the part before "/"), longest first
    prefixes_by_domain: dict[str, list[tuple[str, str]]] = msgspec.field(default_factory=dict)
    # node_label_selector: (key, value) and key-only ("*") postings
    selector_pairs: dict[tuple[str, str], list[str]] = msgspec.field(default_factory=dict)
    selector_keys: dict[str, list[str]] = msgspec.field(default_factory=dict)


class Registry:
    def __init__(self, discovered: Iterable[DiscoveredProfile], providers: dict[str, ProviderRef] | None = None,
                 failures: Iterable[LoadFailure] = (), skipped: Iterable[LoadFailure] = ()):
        self._profiles: dict[str, HardwareProfile] = {}
        self._origins: dict[str, list[ProfileOrigin]] = {}
        self._canonical: dict[str, str] = {}
        self.index = IdentityIndex()
        self.failures: list[LoadFailure] = list(failures)
        self.skipped: list[LoadFailure] = list(skipped)
        self._provider_refs: dict[str, ProviderRef] = dict(providers or {})
        self._providers: dict[str, Any] = {}
        #: profile id -> the provider entry point that failed to import (the default provider serves then)
        self._provider_load_failures: dict[str, LoadFailure] = {}
        #: profile id -> where its declared provider comes from, kept after the reference is used up
        self._provider_origins: dict[str, ProfileOrigin] = {ref.profile_id: ref.origin for ref in self._provider_refs.values()}
        self._lock = threading.RLock()
        self._network: dict[str, NetworkProfile] = {}
        self._network_origins: dict[str, list[ProfileOrigin]] = {}
        for entry in discovered:
            self._add(entry)

    @classmethod
    def from_discovery(cls, found: Discovery) -> Registry:
        registry = cls(found.profiles, found.providers, found.failures, found.skipped)
        registry.set_network([entry.profile for entry in found.network])
        registry._network_origins = {entry.profile.id: list(entry.origins) for entry in found.network}
        return registry

    # -- network devices (kind: network): a kind of their own, never in profiles() ----------------

    def set_network(self, profiles: Iterable[NetworkProfile]) -> None:
        self._network = {p.id: p for p in profiles}

    def network_profiles(self) -> list[NetworkProfile]:
        """The network device profiles (RDMA NICs, SR-IOV functions, DRA network drivers), by id."""
        return [self._network[k] for k in sorted(self._network)]

    def network_origins(self, profile_id: str) -> list[ProfileOrigin]:
        return list(self._network_origins.get(profile_id, []))

    def network_profile(self, profile_id: str) -> NetworkProfile:
        return self._network[profile_id]

    # -- building ---------------------------------------------------------------------------

    def _where(self, profile_id: str) -> str:
        return ", ".join(str(o) for o in self._origins[profile_id])

    def _claim(self, table: dict[Any, str], key: Any, profile: HardwareProfile, origin: str, field_name: str) -> None:
        owner = table.get(key)
        if owner is not None and owner != profile.id:
            raise RegistrationConflict(field_name, key if not isinstance(key, tuple) else list(key),
                                       (owner, self._where(owner)), (profile.id, origin))
        table[key] = profile.id

    def _add(self, entry: DiscoveredProfile) -> None:
        profile, origin = entry.profile, ", ".join(str(o) for o in entry.origins)
        if profile.id in self._profiles:
            if self._canonical[profile.id] == entry.canonical:
                self._origins[profile.id].extend(entry.origins)
                return
            raise RegistrationConflict("id", profile.id, (profile.id, self._where(profile.id)), (profile.id, origin))
        index = self.index
        for alias in self._alias_names(profile):
            self._claim(index.aliases, alias.lower(), profile, origin, "accelerator key")
        for cls in profile.device_classes:
            self._claim(index.device_classes, cls, profile, origin, "device class")
        for driver in profile.inventory.dra_drivers:
            self._claim(index.dra_drivers, driver, profile, origin, "DRA driver")
        for directory in profile.overlay_dirs:
            self._claim(index.overlay_dirs, directory, profile, origin, "upstream overlay directory")
        for pair in profile.label_pairs:
            self._claim(index.label_pairs, pair, profile, origin, "upstream variant/vendor label pair")
        for prefix in profile.resource_prefixes:
            self._claim_prefix(prefix, profile, origin)
        for key, value in profile.node_label_selector.items():
            if value == "*":
                index.selector_keys.setdefault(key, []).append(profile.id)
            else:
                index.selector_pairs.setdefault((key, value), []).append(profile.id)
        self._profiles[profile.id] = profile
        self._origins[profile.id] = list(entry.origins)
        self._canonical[profile.id] = entry.canonical

    @staticmethod
    def _alias_names(profile: HardwareProfile) -> list[str]:
        from llm_d_lens.hardware.conflicts import alias_names

        return alias_names(profile)

    def _claim_prefix(self, prefix: str, profile: HardwareProfile, origin: str) -> None:
        domain = prefix.split("/", 1)[0]
        bucket = self.index.prefixes_by_domain.setdefault(domain, [])
        for other, owner in bucket:
            if owner != profile.id and (prefix.startswith(other) or other.startswith(prefix)):
                raise RegistrationConflict("resource prefix", prefix, (owner, f"{other!r}, {self._where(owner)}"), (profile.id, origin))
        bucket.append((prefix, profile.id))
        bucket.sort(key=lambda item: len(item[0]), reverse=True)

    # -- reading ----------------------------------------------------------------------------

    def profiles(self) -> list[HardwareProfile]:
        return [self._profiles[k] for k in sorted(self._profiles)]

    def ids(self) -> list[str]:
        return sorted(self._profiles)

    def origins(self, profile_id: str) -> list[ProfileOrigin]:
        return list(self._origins[profile_id])

    def __contains__(self, key: str) -> bool:
        return key.lower() in self.index.aliases

    def __len__(self) -> int:
        return len(self._profiles)

    def get(self, key: str) -> HardwareProfile:
        """The profile an explicit name refers to; unknown names raise ``ACCELERATOR_NOT_REGISTERED``."""
        profile_id = self.index.aliases.get(key.strip().lower())
        if profile_id is not None:
            return self._profiles[profile_id]
        wanted = key.strip().lower()
        for failure in self.failures:  # a plugin that failed or lost a conflict: say so, not "unknown"
            if wanted in (failure.profile_id, failure.name):
                raise PluginLoadFailed(f"hardware {key!r} is not available: {failure}", details=failure.to_dict())
        for skipped in self.skipped:  # left out on purpose by a setting: say which, or the user hunts for a typo
            if wanted in (skipped.profile_id, skipped.name):
                raise AcceleratorNotRegistered(key, self.nearest(key),
                                               reason=f"it was skipped ({skipped.reason}; {skipped.distribution})")
        raise AcceleratorNotRegistered(key, self.nearest(key))

    def nearest(self, key: str, n: int = 3) -> list[str]:
        import difflib  # only a name that matches nothing asks for suggestions

        close = difflib.get_close_matches(key.strip().lower(), sorted(self.index.aliases), n=n, cutoff=0.5)
        return close or self.ids()

    def version_hash(self) -> str:
        """Changes whenever a profile is added, removed or edited; lets API clients cache."""
        digest = blake2b(digest_size=8)
        for profile_id in sorted(self._canonical):
            digest.update(profile_id.encode())
            digest.update(b"\0")
            digest.update(self._canonical[profile_id].encode())
            digest.update(b"\0")
        for profile in self.network_profiles():  # network devices are content too
            digest.update(b"network\0" + msgspec.json.encode(profile) + b"\0")
        return digest.hexdigest()

    # -- providers --------------------------------------------------------------------------

    def register_provider(self, profile_id: str, provider: Any) -> None:
        if profile_id not in self._profiles:
            raise AcceleratorNotRegistered(profile_id, self.nearest(profile_id), kind="hardware profile for this provider")
        with self._lock:
            if profile_id in self._providers or profile_id in self._provider_refs:
                raise AlreadyRegistered(f"a provider for {profile_id!r} is already registered")
            self._providers[profile_id] = provider

    def has_provider_entry(self, profile_id: str) -> bool:
        return profile_id in self._provider_refs or profile_id in self._providers

    def provider(self, key: str) -> Any:
        """The hardware's provider, imported on first use; the default one when it declares none."""
        profile = self.get(key)
        with self._lock:
            if profile.id in self._providers:
                return self._providers[profile.id]
            ref = self._provider_refs.get(profile.id)
        if ref is None:
            from llm_d_lens.hardware.providers.base import ProfileProvider

            provider = ProfileProvider(profile)
        else:  # loaded without the lock held: a provider touching the registry must not deadlock
            provider = self._load_provider(ref)
        with self._lock:
            return self._providers.setdefault(profile.id, provider)

    def _load_provider(self, ref: ProviderRef) -> Any:
        """Lens's own provider is built here; a third-party one in its distribution's worker (``provider_host.py``)."""
        from llm_d_lens.hardware.isolation import (
            GuardedFailure,
            call_guarded,
            timeout_from_env,
        )
        def load() -> Any:
            target = ref.entry_point.load()
            return target() if isinstance(target, type) else target

        try:
            if ref.own:
                return call_guarded(load, timeout=timeout_from_env())
            from llm_d_lens.hardware.provider_host import RemoteProvider  # a worker's process machinery: only for one
            from llm_d_lens.hardware.providers.base import HARDWARE_HOOKS

            provider = RemoteProvider.build(ref.entry_point, HARDWARE_HOOKS, timeout=timeout_from_env())
        except GuardedFailure as exc:  # a provider may do anything on import; report it, named
            failure = self._provider_failed(ref, str(exc))
            raise PluginLoadFailed(f"provider of {ref.profile_id!r} failed to load: {failure}", details=failure.to_dict()) from None
        provider.host.on_broken(lambda broken: self._provider_failed(ref, f"{provider.class_name} {broken}"))
        return provider

    def _provider_failed(self, ref: ProviderRef, reason: str) -> LoadFailure:
        """Record a provider that failed to load, or whose worker later died or hung: named, once."""
        with self._lock:
            known = self._provider_load_failures.get(ref.profile_id)
            if known is not None:
                return known
            failure = LoadFailure("llm_d_lens.hardware.providers", ref.profile_id, ref.origin.location,
                                  reason, ref.profile_id, kind="provider")
            self.failures.append(failure)
            self._provider_load_failures[ref.profile_id] = failure
            self._provider_refs.pop(ref.profile_id, None)
            return failure

    def provider_status(self, profile_id: str) -> dict[str, Any]:
        """Which provider serves a hardware, from where, and which rival entry points were refused.

        ``status`` is ``serving`` (its declared provider loaded, or registered in code), ``default``
        (it declares none: the profile alone drives it), ``failed`` (its declared provider did not
        import) or ``not-loaded`` (declared, not imported yet; :meth:`load_all_providers` imports).
        A provider refused at discovery (another distribution claiming this id) never changes the
        status of the one that serves: it is listed under ``refused``.
        """
        from llm_d_lens.hardware.discovery import PROVIDERS_GROUP
        from llm_d_lens.hardware.providers.base import ProfileProvider

        profile = self.get(profile_id)
        with self._lock:
            loaded = self._providers.get(profile.id)
            failed = self._provider_load_failures.get(profile.id)
            origin = self._provider_origins.get(profile.id)
        refused = [{"distribution": f.distribution, "entry_point": f.name, "reason": f.reason}
                   for f in self.failures
                   if f.group == PROVIDERS_GROUP and f.kind == "provider" and f is not failed
                   and (f.profile_id or f.name).lower() == profile.id]
        distribution = origin.location if origin is not None and origin.kind == "entry-point" else None
        if failed is not None:
            status, name, source = "failed", None, str(origin) if origin else failed.distribution
        elif origin is not None:
            status, name, source = "not-loaded", None, str(origin)
            if loaded is not None:
                # a provider in a worker exists only once its host module is imported: else it is Lens's own, here
                host = sys.modules.get("llm_d_lens.hardware.provider_host")
                status, name = "serving", host.provider_name(loaded) if host is not None else type(loaded).__name__
        elif loaded is not None and type(loaded) is not ProfileProvider:
            status, name, source = "serving", type(loaded).__name__, "registered in code (register_provider)"
        else:
            status, name, source = "default", "ProfileProvider", "the profile alone (no provider declared)"
        return {"provider": name, "status": status, "from": source, "distribution": distribution, "refused": refused,
                **({"reason": failed.reason} if failed is not None else {})}

    def load_all_providers(self) -> list[LoadFailure]:
        """Import every declared provider now (``lens hardware doctor``); returns new failures."""
        before = len(self.failures)
        for profile_id in list(self._provider_refs):
            try:
                self.provider(profile_id)
            except PluginLoadFailed:
                pass
        return self.failures[before:]


_registry: Registry | None = None
_registry_lock = threading.Lock()


def get_registry() -> Registry:
    """The process-wide registry; discovery runs on first use, once."""
    global _registry
    if _registry is None:
        with _registry_lock:
            if _registry is None:
                _registry = Registry.from_discovery(discover(PluginSettings.from_env()))
    return _registry


def current_registry() -> Registry | None:
    """The process-wide registry if something has built it already; never starts discovery."""
    return _registry


def set_registry(registry: Registry | None) -> None:
    """Replace (or with None, forget) the process-wide registry; for tests and embedding."""
    global _registry
    with _registry_lock:
        _registry = registry


def get_profile(key: str) -> HardwareProfile:
    return get_registry().get(key)


def register_provider(profile_id: str, provider: Any) -> None:
    get_registry().register_provider(profile_id, provider)
