"""The raw cluster objects an inventory is built from, whichever source they came from.

A live cluster and a saved snapshot both arrive as ``List`` documents (what ``kubectl get ... -o
json`` prints); :meth:`ClusterObjects.from_documents` checks their shape once and sorts the items
by kind, so the inventory code reads plain dicts without re-checking them. Each document remembers
where it came from (a file, a kubectl command) so an error about one object can name it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from llm_d_lens.cluster.errors import SnapshotInvalid, show_value

#: The kinds the inventory reads, and the attribute each is kept in.
KINDS: dict[str, str] = {
    "Node": "nodes",
    "Pod": "pods",
    "ResourceSlice": "resource_slices",
    "DeviceClass": "device_classes",
    "ResourceClaim": "resource_claims",
}
DRA_KINDS = ("ResourceSlice", "DeviceClass", "ResourceClaim")


class Document(msgspec.Struct, frozen=True):
    """One parsed ``List`` and where it came from (``snapshot.json``, ``kubectl get nodes -o json``)."""

    source: str
    body: Any


class ClusterObjects(msgspec.Struct):
    nodes: list[dict[str, Any]] = msgspec.field(default_factory=list)
    pods: list[dict[str, Any]] = msgspec.field(default_factory=list)
    resource_slices: list[dict[str, Any]] = msgspec.field(default_factory=list)
    device_classes: list[dict[str, Any]] = msgspec.field(default_factory=list)
    resource_claims: list[dict[str, Any]] = msgspec.field(default_factory=list)
    #: True: the cluster serves the DRA API; False: it does not; None: unknown (a snapshot without DRA kinds).
    dra_api: bool | None = None
    #: Items of kinds the inventory does not read (a snapshot may hold Namespaces, Services...).
    ignored_kinds: dict[str, int] = msgspec.field(default_factory=dict)
    documents: list[Document] = msgspec.field(default_factory=list)
    #: Notes on objects met more than once (a directory holding ``all.json`` and ``nodes.json``): each is kept once.
    duplicates: list[str] = msgspec.field(default_factory=list)
    _seen: set[tuple[str, str | None, str]] = msgspec.field(default_factory=set)

    @classmethod
    def from_documents(cls, documents: Sequence[Document], *, dra_api: bool | None = None) -> ClusterObjects:
        objects = cls(dra_api=dra_api, documents=list(documents))
        for document in documents:
            objects._add(document)
        if objects.dra_api is None and any(getattr(objects, KINDS[k]) for k in DRA_KINDS):
            objects.dra_api = True
        return objects

    def _add(self, document: Document) -> None:
        body, source = document.body, document.source
        if not isinstance(body, dict):
            raise SnapshotInvalid(source, f"is not a Kubernetes List (the top level is a JSON {_json_type(body)})")
        list_kind = body.get("kind")
        if not isinstance(list_kind, str) or not list_kind.endswith("List"):
            shown = f"kind {list_kind!r}" if isinstance(list_kind, str) else "no kind"
            raise SnapshotInvalid(source, f"is not a Kubernetes List ({shown}); write it with `kubectl get ... -o json`")
        items = body.get("items")
        if items is None:
            items = []
        if not isinstance(items, list):
            raise SnapshotInvalid(source, f"items: is a JSON {_json_type(items)}, not a list")
        # A typed list (NodeList, as the API itself returns) may leave kind off its items.
        implied = list_kind[: -len("List")] or None
        buckets = {kind: getattr(self, attr) for kind, attr in KINDS.items()}
        ignored, seen = self.ignored_kinds, self._seen
        for index, item in enumerate(items):
            if type(item) is not dict:
                raise SnapshotInvalid(source, f"items[{index}]: is a JSON {_json_type(item)}, not an object")
            kind = item.get("kind")
            if kind is None and implied is not None:
                item["kind"] = kind = implied
            if not isinstance(kind, str) or not kind:
                raise SnapshotInvalid(source, f'items[{index}]: has no "kind"')
            metadata = item.get("metadata")
            if type(metadata) is not dict:
                raise SnapshotInvalid(source, f'items[{index}] ({kind}): has no "metadata"')
            name = metadata.get("name")
            if not isinstance(name, str) or not name:
                raise SnapshotInvalid(source, f'items[{index}] ({kind}): metadata has no "name"')
            bucket = buckets.get(kind)
            if bucket is None:
                ignored[kind] = ignored.get(kind, 0) + 1
                continue
            namespace = metadata.get("namespace")
            if namespace is not None and type(namespace) is not str:
                raise SnapshotInvalid(source, f"items[{index}] ({kind} {name}): metadata.namespace: "
                                              f"{show_value(namespace)} is a JSON {_json_type(namespace)}, not a string")
            key = (kind, namespace, name)
            if key in seen:  # the same object saved twice would count its devices twice
                shown = f"{kind} {key[1]}/{name}" if key[1] else f"{kind} {name}"
                self.duplicates.append(f"{shown} appears again in {source}; counted once")
                continue
            seen.add(key)
            bucket.append(item)

    def source_of(self, item: Any) -> str | None:
        """The file or command an object came from; only called on the way to an error."""
        for document in self.documents:
            items = document.body.get("items") if isinstance(document.body, dict) else None
            if isinstance(items, list) and any(candidate is item for candidate in items):
                return document.source
        return None

    def counts(self) -> dict[str, int]:
        return {kind: len(getattr(self, attr)) for kind, attr in KINDS.items()}

    def all_items(self) -> Iterable[dict[str, Any]]:
        """Every item the inventory reads, grouped by kind in a stable order (for snapshots)."""
        for attr in KINDS.values():
            yield from getattr(self, attr)


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def mapping_at(item: Any, path: str, value: Any) -> dict[str, Any]:
    """``value`` (found at ``path`` in ``item``) as a JSON object; absent is empty, anything else an error."""
    if type(value) is dict:
        return value
    if value is None:
        return {}
    from llm_d_lens.cluster.errors import ObjectInvalid

    raise ObjectInvalid(item, path, value, f"is a JSON {_json_type(value)}, not an object")


def string_at(item: Any, path: str, value: Any) -> str | None:
    """``value`` as a JSON string; absent is None, anything else an error (names and phases are keys)."""
    if value is None or type(value) is str:
        return value
    from llm_d_lens.cluster.errors import ObjectInvalid

    raise ObjectInvalid(item, path, value, f"is a JSON {_json_type(value)}, not a string")


def object_at(item: Any, path: str, value: Any) -> dict[str, Any]:
    """``value`` as a JSON object, where null is as wrong as any other type (a list entry)."""
    if type(value) is dict:
        return value
    from llm_d_lens.cluster.errors import ObjectInvalid

    raise ObjectInvalid(item, path, value, f"is a JSON {_json_type(value)}, not an object")


def list_at(item: Any, path: str, value: Any) -> list[Any]:
    """``value`` as a JSON array; absent is empty, anything else an error."""
    if type(value) is list:
        return value
    if value is None:
        return []
    from llm_d_lens.cluster.errors import ObjectInvalid

    raise ObjectInvalid(item, path, value, f"is a JSON {_json_type(value)}, not a list")
