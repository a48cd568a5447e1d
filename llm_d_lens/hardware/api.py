"""``/api/v1/hardware``: the registered profiles, complete, with a version hash for caching."""

from __future__ import annotations

import threading
from typing import Any

from fastapi import APIRouter, Request, Response

from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.hardware.views import capabilities_document, profile_document

router = APIRouter(tags=["hardware"])


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


@router.get("/hardware/network")
def network_devices() -> dict[str, Any]:
    """The network device profiles (kind: network): NICs, SR-IOV functions, DRA network drivers."""
    from llm_d_lens.hardware.views import network_rows

    return {"profiles": network_rows(get_registry())}


@router.get("/hardware/{key}")
def hardware(key: str) -> dict[str, Any]:
    """One profile by id or alias; an unknown key is a 404 ``ACCELERATOR_NOT_REGISTERED`` problem."""
    registry = get_registry()
    return profile_document(registry.get(key), registry)
