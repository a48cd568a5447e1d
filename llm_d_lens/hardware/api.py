"""``/api/v1/hardware``: the registered profiles, complete, with a version hash for caching."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from llm_d_lens.hardware.registry import get_registry

router = APIRouter(tags=["hardware"])


def _profile_document(profile: Any, registry: Any) -> dict[str, Any]:
    document = profile.model_dump(mode="json")
    document["aliases"] = profile.aliases
    document["access_mode_details"] = {name: mode.model_dump(mode="json") for name, mode in profile.effective_modes().items()}
    document["upstream_label_pairs"] = [{"variant": v, "vendor": n} for v, n in profile.label_pairs]
    document["origins"] = [o.to_dict() for o in registry.origins(profile.id)]
    return document


@router.get("/hardware/capabilities")
def capabilities() -> dict[str, Any]:
    """Every registered profile with all its fields, and a hash that changes when any does."""
    registry = get_registry()
    return {
        "version": registry.version_hash(),
        "profiles": [_profile_document(p, registry) for p in registry.profiles()],
        "failures": [f.to_dict() for f in registry.failures],
    }


@router.get("/hardware/{key}")
def hardware(key: str) -> dict[str, Any]:
    """One profile by id or alias; an unknown key is a 404 ``ACCELERATOR_NOT_REGISTERED`` problem."""
    registry = get_registry()
    return _profile_document(registry.get(key), registry)
