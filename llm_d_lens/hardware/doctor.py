"""The doctor's report: every plugin loaded afresh, every provider imported, what failed and why.

One function, read by ``lens hardware doctor`` and by the console's banner and doctor page, so the
two never disagree about whether a plugin is broken.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def doctor_report(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Discover without the plugin cache, register, import providers; ``ok`` is false while any failure exists."""
    from llm_d_lens.hardware import notice
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
    report["ok"] = not report["failures"]
    return report


def _failed(registry: Any, profile_id: str) -> bool:
    return any(f.profile_id == profile_id and f.group.endswith("providers") for f in registry.failures)
