"""The doctor's report: what discovery found, what failed to load or register, and why.

One function, read by ``lens hardware doctor`` and by the console's banner and doctor page, so the
two never disagree about whether a plugin is broken.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llm_d_lens.hardware.errors import RegistrationConflict


def doctor_report(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Discover everything, import every provider; ``ok`` is false while any failure or conflict exists."""
    from llm_d_lens.hardware.discovery import discover
    from llm_d_lens.hardware.registry import Registry, set_registry
    from llm_d_lens.hardware.settings import PluginSettings

    settings = PluginSettings.from_env(environ)
    found = discover(settings)
    report: dict[str, Any] = {"profiles": [], "failures": [], "skipped": [f.to_dict() for f in found.skipped],
                              "conflict": None, "settings": {"autoload": settings.autoload,
                              "allow": sorted(settings.allow) if settings.allow is not None else None,
                              "block": sorted(settings.block)}}
    try:
        registry = Registry.from_discovery(found)
    except RegistrationConflict as exc:
        report["conflict"] = {"message": exc.message, **exc.details}
        registry = None
    if registry is not None:
        set_registry(registry)
        registry.load_all_providers()
        for p in registry.profiles():
            provider = registry.provider(p.id) if not _failed(registry, p.id) else None
            report["profiles"].append({"id": p.id, "origins": [str(o) for o in registry.origins(p.id)],
                                       "provider": type(provider).__name__ if provider is not None else None})
        report["version_hash"] = registry.version_hash()
    report["failures"] = [f.to_dict() for f in (registry.failures if registry else found.failures)]
    report["ok"] = not report["failures"] and report["conflict"] is None
    return report


def _failed(registry: Any, profile_id: str) -> bool:
    return any(f.profile_id == profile_id and f.group.endswith("providers") for f in registry.failures)
