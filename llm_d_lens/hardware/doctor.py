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
        served = registry.provider_status(p.id)
        report["profiles"].append({"id": p.id, "origins": [str(o) for o in registry.origins(p.id)],
                                   "provider": served["provider"], "provider_status": served["status"],
                                   "provider_from": served["from"], "provider_distribution": served["distribution"],
                                   "refused_providers": served["refused"]})
    report["distributions"] = _by_distribution(registry, report["profiles"])
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


def _by_distribution(registry: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per distribution: the hardware it declares, the providers it serves and the provider entry
    points of it that were refused, with why. Bundled files count as Lens's own distribution, Lens first."""
    from llm_d_lens.hardware.discovery import PROVIDERS_GROUP

    lens = _lens_label()
    found: dict[str, dict[str, Any]] = {}

    def of(name: str) -> dict[str, Any]:
        return found.setdefault(name, {"distribution": name, "profiles": [], "serves": [], "refused": [], "failed": []})

    for row in rows:
        for origin in registry.origins(row["id"]):
            name = origin.location if origin.kind == "entry-point" else lens
            if row["id"] not in of(name)["profiles"]:
                of(name)["profiles"].append(row["id"])
        source = row["provider_distribution"]
        if source is not None:
            of(source)["failed" if row["provider_status"] == "failed" else "serves"].append(
                {"id": row["id"], "provider": row["provider"]})
    for f in registry.failures:
        if f.group == PROVIDERS_GROUP and f.kind == "provider" and not any(
                f.distribution == d and f.name == r["id"] for d, entry in found.items() for r in entry["failed"]):
            of(f.distribution)["refused"].append({"id": f.name, "reason": f.reason})
    return sorted(found.values(), key=lambda d: (d["distribution"] != lens, d["distribution"]))


def _lens_label() -> str:
    """Lens's own distribution as discovery names an entry point's: ``name version``."""
    from importlib.metadata import PackageNotFoundError, version

    from llm_d_lens.hardware.settings import OWN_DISTRIBUTION

    try:
        return f"{OWN_DISTRIBUTION} {version(OWN_DISTRIBUTION)}"
    except PackageNotFoundError:  # run from a source tree never installed
        return f"{OWN_DISTRIBUTION} (source tree)"
