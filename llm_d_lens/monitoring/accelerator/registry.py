"""Telemetry providers by id: what ``telemetry.provider_id`` in a profile names.

Every built-in uses the declarative provider (``declarative``): the profile's
``device_metric_sources`` say everything Lens reads, and it adds nothing. A plugin that needs more
(a quantity derived from others, a vendor-specific correction) registers its own provider in the
``llm_d_lens.telemetry.providers`` entry-point group; the entry-point name is the provider id, the
value a class (instantiated without arguments) or an instance with one method::

    def derive(self, profile, devices) -> list[str]:
        # add or change values in each DeviceReading.values (field name -> value), return warnings

A quantity a provider adds appears in each device's ``derived`` mapping. A provider is built on
first use in its distribution's worker process (``hardware/provider_host.py``) and ``derive`` is
called there: the devices cross as plain data and their ``values`` come back checked. One that
fails to load, raises in ``derive``, answers amiss, dies or hangs is reported, named, and the
readings stay as the declarative part made them.
A profile whose ``provider_id`` names no registered provider is refused by name, field and value.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from llm_d_lens.errors import LensError
from llm_d_lens.hardware.entry_points import EntryPoint, installed
from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.hardware.providers.base import TelemetryProvider
from llm_d_lens.hardware.telemetry_providers import DECLARATIVE, GROUP
from llm_d_lens.monitoring.errors import TelemetryProviderFailed, TelemetryProviderUnknown

__all__ = ["DECLARATIVE", "GROUP", "DeclarativeProvider", "TelemetryProvider", "TelemetryRegistry"]


class DeclarativeProvider:
    """The profile's ``device_metric_sources`` are the whole story: nothing to derive."""

    def derive(self, profile: HardwareProfile, devices: Sequence[Any]) -> list[str]:
        return []


class TelemetryRegistry:
    """Built-in providers plus the entry-point group's, each imported on first use."""

    def __init__(self, eps: Sequence[EntryPoint] | None = None):
        self._providers: dict[str, Any] = {DECLARATIVE: DeclarativeProvider()}
        self._refs: dict[str, EntryPoint] = {}
        self.failures: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        for ep in eps if eps is not None else installed((GROUP,))[GROUP]:
            dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist is not None else "an unknown distribution"
            if ep.name in self._providers or ep.name in self._refs:
                self.failures.append({"provider_id": ep.name, "distribution": dist,
                                      "reason": f"telemetry provider id {ep.name!r} is already registered"})
                continue
            self._refs[ep.name] = ep

    def ids(self) -> list[str]:
        return sorted({*self._providers, *self._refs})

    def for_profile(self, profile: HardwareProfile) -> Any:
        """The provider a profile names; unknown or broken ones are coded errors naming the profile."""
        provider_id = profile.telemetry.provider_id if profile.telemetry is not None else DECLARATIVE
        with self._lock:
            if provider_id in self._providers:
                return self._providers[provider_id]
            ref = self._refs.get(provider_id)
        if ref is None:
            raise TelemetryProviderUnknown(
                f"profile {profile.id!r}: $.telemetry.provider_id names no registered telemetry provider "
                f"(value: {provider_id!r}); registered: {', '.join(self.ids())}. A plugin registers one in the "
                f"{GROUP!r} entry-point group",
                details={"hardware": profile.id, "path": "$.telemetry.provider_id", "value": provider_id,
                         "registered": self.ids()})
        provider = self._load(ref, profile)
        with self._lock:
            return self._providers.setdefault(provider_id, provider)

    def problems(self, profiles: Sequence[HardwareProfile]) -> list[dict[str, Any]]:
        """Each profile whose telemetry provider is unknown or fails to load, in the shape of a plugin failure."""
        found = [{"group": GROUP, "name": f["provider_id"], "distribution": f["distribution"], "reason": f["reason"],
                  "profile_id": None, "kind": "telemetry-provider"} for f in self.failures]
        for profile in profiles:
            if profile.telemetry is None:
                continue
            try:
                self.for_profile(profile)
            except LensError as exc:
                found.append({"group": GROUP, "name": profile.telemetry.provider_id, "distribution": "-",
                              "reason": exc.message, "profile_id": profile.id, "kind": "telemetry-provider"})
        return found

    def _load(self, ref: EntryPoint, profile: HardwareProfile) -> Any:
        """Built in its distribution's worker (``hardware/provider_host.py``): every provider here is a plugin's."""
        from llm_d_lens.hardware.isolation import GuardedFailure, timeout_from_env
        from llm_d_lens.hardware.provider_host import RemoteProvider
        from llm_d_lens.hardware.providers.base import TELEMETRY_HOOKS

        try:
            provider = RemoteProvider.build(ref, TELEMETRY_HOOKS, timeout=timeout_from_env())
        except GuardedFailure as exc:
            raise TelemetryProviderFailed(f"telemetry provider {ref.name!r} (for {profile.id!r}) failed to load: {exc}",
                                          details={"hardware": profile.id, "provider_id": ref.name}) from None
        if not callable(getattr(provider, "derive", None)):
            raise TelemetryProviderFailed(f"telemetry provider {ref.name!r} (for {profile.id!r}) has no derive(profile, "
                                          "devices) method", details={"hardware": profile.id, "provider_id": ref.name})
        dist = f"{ref.dist.name} {ref.dist.version}" if ref.dist is not None else "an unknown distribution"

        def broken(failure: Exception) -> None:  # its worker died or hung in a later call: /readyz names it
            with self._lock:
                self.failures.append({"provider_id": ref.name, "distribution": dist,
                                      "reason": f"telemetry provider {provider.class_name} {failure}"})

        provider.host.on_broken(broken)
        return provider


def derive(provider: Any, profile: HardwareProfile, devices: Sequence[Any]) -> list[str]:
    """Run a provider's ``derive``; anything it raises or returns amiss becomes one warning."""
    from llm_d_lens.hardware.provider_host import RemoteProvider

    if isinstance(provider, DeclarativeProvider):
        return []
    if isinstance(provider, RemoteProvider):
        return _derive_remote(provider, profile, devices)
    name = type(provider).__name__
    saved = [dict(d.values) for d in devices]
    try:
        warnings = provider.derive(profile, devices)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - plugin code must not cost the readings
        for device, values in zip(devices, saved):
            device.values = values
        return [f"{profile.id}: telemetry provider {name} failed in derive(): {type(exc).__name__}: {exc}; "
                "its quantities are left out"]
    return _warnings(profile, name, warnings)


def _warnings(profile: HardwareProfile, name: str, warnings: Any) -> list[str]:
    if warnings is None:
        return []
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        return [f"{profile.id}: telemetry provider {name}: derive() must return a list of warning strings"]
    return warnings


def _derive_remote(provider: Any, profile: HardwareProfile, devices: Sequence[Any]) -> list[str]:
    """``derive`` in the provider's worker: the devices cross as plain data and only their ``values`` come back,
    each checked (a mapping of quantity names to finite numbers, one per device); anything amiss leaves them as they were."""
    from llm_d_lens.hardware.isolation import GuardedFailure
    from llm_d_lens.hardware.plain import PlainRefused, from_plain

    name = provider.class_name
    try:
        reply = provider.call("derive", [profile, list(devices)], return_args=[1])
        returned = (reply.get("args") or {}).get("1")
        if not isinstance(returned, list) or len(returned) != len(devices):
            raise PlainRefused("the devices it was handed did not come back one for one")
        values = [from_plain(dict[str, float], item.get("values") if isinstance(item, dict) else None, f"$[{i}].values")
                  for i, item in enumerate(returned)]
    except GuardedFailure as exc:
        what = f"failed in derive(): {exc}" if exc.kind == "raised" else str(exc)
        return [f"{profile.id}: telemetry provider {name} {what}; its quantities are left out"]
    except PlainRefused as exc:
        return [f"{profile.id}: telemetry provider {name}: derive() left values Lens does not take ({exc}); "
                "its quantities are left out"]
    for device, new in zip(devices, values):
        device.values = new
    return _warnings(profile, name, reply.get("value"))


_registry: TelemetryRegistry | None = None


def get_telemetry_registry() -> TelemetryRegistry:
    global _registry
    if _registry is None:
        _registry = TelemetryRegistry()
    return _registry


def set_telemetry_registry(registry: TelemetryRegistry | None) -> None:
    """Replace (or with None, forget) the process-wide telemetry registry; for tests."""
    global _registry
    _registry = registry
