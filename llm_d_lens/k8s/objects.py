"""Reading Kubernetes objects held as plain dicts (``kubectl get -o json``, rendered manifests).

Lenient on purpose: a field that is missing or of the wrong type reads as empty, so one odd object
in a cluster does not stop a listing. Code that must refuse bad input and say where (files a user
gave) validates first and names the field itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def items(document: Any) -> list[dict[str, Any]]:
    """The objects of a ``kubectl get -o json`` answer (a List, or a single object)."""
    if isinstance(document, Mapping):
        if isinstance(document.get("items"), list):
            return [item for item in document["items"] if isinstance(item, dict)]
        if "kind" in document:
            return [dict(document)]
    return []


def get_path(data: Any, *keys: str) -> Any:
    """``data[k1][k2]...``, or None where a step is missing or not a mapping."""
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    labels = get_path(obj, "metadata", "labels")
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}


def name_of(obj: Mapping[str, Any]) -> str:
    return str(get_path(obj, "metadata", "name") or "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str(get_path(obj, "metadata", "namespace") or "")


def is_extended_resource(name: str) -> bool:
    """``vendor.example/thing``: a domain-prefixed resource outside kubernetes.io (cpu, memory,
    hugepages-* and kubernetes.io/* are the node's own)."""
    domain, slash, _ = name.partition("/")
    return bool(slash) and bool(domain) and not domain.endswith("kubernetes.io")


def whole_quantity(value: Any) -> int | None:
    """A whole count from a Kubernetes quantity (``2``, ``"2"``); None for anything else (``"1Gi"``, ``true``)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None
