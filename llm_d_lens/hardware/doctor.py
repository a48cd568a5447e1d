"""The doctor's report: every plugin loaded afresh, every provider imported, what failed and why.

One function, read by ``lens hardware doctor`` and by the console's banner and doctor page, so the
two never disagree about whether a plugin is broken.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def doctor_report(environ: Mapping[str, str] | None = None, telemetry_providers: frozenset[str] | None = None) -> dict[str, Any]:
    """Discover without the plugin cache, register, import providers; ``ok`` is false while any failure exists.

    A registered profile whose ``telemetry.provider_id`` nobody registered is a failure too (the guide:
    it "must be registered"); what is valid but probably wrong (an unknown benchmark profile, an arch
    that is not the overlay directory) is listed under ``warnings`` without failing the doctor.
    """
    from llm_d_lens.hardware import notice, rules
    from llm_d_lens.hardware.benchmark_profiles import known_profiles
    from llm_d_lens.hardware.telemetry_providers import GROUP, registered_ids
    from llm_d_lens.hardware.discovery import discover
    from llm_d_lens.hardware.registry import Registry, set_registry
    from llm_d_lens.hardware.settings import PluginSettings

    settings = PluginSettings.from_env(environ)
    registry = Registry.from_discovery(discover(settings, use_cache=False))
    set_registry(registry)
    notice.shown = True
    registry.load_all_providers()
    report: dict[str, Any] = {"profiles": [], "skipped": [f.to_dict() for f in registry.skipped],
                              "settings": {"autoload": settings.autoload,
                                           "allow": sorted(settings.allow) if settings.allow is not None else None,
                                           "block": sorted(settings.block)}}
    for p in registry.profiles():
        provider = registry.provider(p.id) if not _failed(registry, p.id) else None
        report["profiles"].append({"id": p.id, "origins": [str(o) for o in registry.origins(p.id)],
                                   "provider": type(provider).__name__ if provider is not None else None})
    report["version_hash"] = registry.version_hash()
    report["failures"] = [f.to_dict() for f in registry.failures]
    providers = telemetry_providers if telemetry_providers is not None else registered_ids()
    known = known_profiles(environ)
    report["warnings"] = []
    for p in registry.profiles():
        origin = ", ".join(str(o) for o in registry.origins(p.id))
        for issue in rules.registered_issues(p, providers):
            report["failures"].append({"group": GROUP, "name": issue.value, "distribution": origin,
                                       "reason": f"profile {p.id!r}: {issue}", "profile_id": p.id,
                                       "kind": "telemetry-provider", "details": issue.to_dict()})
        report["warnings"] += [{"profile_id": p.id, "from": origin, **issue.to_dict()} for issue in rules.advise(p, known)]
    report["ok"] = not report["failures"]
    return report


def _failed(registry: Any, profile_id: str) -> bool:
    return any(f.profile_id == profile_id and f.group.endswith("providers") for f in registry.failures)
