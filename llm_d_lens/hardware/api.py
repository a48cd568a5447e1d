"""``/api/v1/hardware``: the registered profiles, complete, with a version hash for caching."""

from __future__ import annotations

from typing import Any

import threading

from fastapi import APIRouter, Request, Response

from llm_d_lens.hardware.registry import get_registry

router = APIRouter(tags=["hardware"])


def _profile_document(profile: Any, registry: Any) -> dict[str, Any]:
    document = profile.model_dump(mode="json")
    document["aliases"] = profile.aliases
    document["access_mode_details"] = {name: mode.model_dump(mode="json") for name, mode in profile.effective_modes().items()}
    document["upstream_label_pairs"] = [{"variant": v, "vendor": n} for v, n in profile.label_pairs]
    document["origins"] = [o.to_dict() for o in registry.origins(profile.id)]
    return document


def capabilities() -> dict[str, Any]:
    """The document ``GET /api/v1/hardware/capabilities`` answers, built afresh (the console reads it)."""
    return capabilities_document(get_registry())


def capabilities_document(registry: Any) -> dict[str, Any]:
    return {
        "version": registry.version_hash(),
        "profiles": [_profile_document(p, registry) for p in registry.profiles()],
        "failures": [f.to_dict() for f in registry.failures],
    }


# A registry's profiles are fixed when it is built; only its failures can grow (a provider that
# fails on first use). So the encoded document is kept per registry object and failure count.
_encoded_lock = threading.Lock()
_encoded: tuple[Any, int, Any] | None = None  # (registry, failures, Encoded)


@router.get("/hardware/capabilities", response_model=dict[str, Any],
               responses={304: {"description": "The client's copy (If-None-Match names its ETag) is current."}})
async def capabilities_route(request: Request) -> Response:
    """Every registered profile with all its fields, and a hash that changes when any does.

    The ``ETag`` starts with that hash; send it back in ``If-None-Match`` to get ``304 Not Modified``.
    Async: once encoded, an answer is a lookup, not worth a worker thread (the first build is a few ms).
    """
    from llm_d_lens.web.conditional import encode, respond

    global _encoded
    registry = get_registry()
    with _encoded_lock:
        if _encoded is None or _encoded[0] is not registry or _encoded[1] != len(registry.failures):
            document = capabilities_document(registry)
            _encoded = (registry, len(registry.failures), encode(document, document["version"]))
        found = _encoded[2]
    return respond(request, found)


@router.get("/hardware/{key}")
def hardware(key: str) -> dict[str, Any]:
    """One profile by id or alias; an unknown key is a 404 ``ACCELERATOR_NOT_REGISTERED`` problem."""
    registry = get_registry()
    return _profile_document(registry.get(key), registry)
