"""What the console's pages read from one kept inventory, derived once and kept beside it.

The serving floor keeps one :class:`~llm_d_lens.serving.inventories.Inventory` per unchanged snapshot
(and the watch one per change of a live cluster). Turning its 5,000 nodes into dicts on every page
view cost 54–275 ms and blocked the event loop; a page only needs the summary, the buckets, the notes
and one page of one hardware's nodes. So each inventory gets one :class:`InventoryView`, built once in
a worker thread: summaries and notes up front, each hardware's rows (and each sort of them) the first
time a tab asks. A new inventory (an edited snapshot, a watch event) is a new object, so a view is
never stale; the views of dropped inventories go with them (weak references).
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from llm_d_lens.console.tables import _sortable


@dataclass
class Unknown:
    """Devices a total leaves out, counted and named: the reader must see what a figure does not cover."""

    devices: int = 0
    hardware: list[str] = field(default_factory=list)


@dataclass
class InventoryView:
    """The figures and rows the console shows for one inventory (see the module's docstring)."""

    source: dict[str, Any]
    dra_api: bool | None
    summary: dict[str, Any]
    vendors: list[dict[str, Any]]
    unsupported: list[dict[str, Any]]
    notes: list[str]
    objects: dict[str, int]
    #: (node, note) exactly as ``lens cluster inspect`` prints them under "notes:"
    node_notes: list[tuple[str, str]]
    not_ready: list[str]
    cordoned: list[str]
    vram_unknown: Unknown
    #: network device profiles in the cluster (NICs counted once per node), apart from the accelerators
    network: list[dict[str, Any]] = field(default_factory=list)
    _nodes: Any = field(repr=False, default=None)  # the overview's NodeRecords, read lazily per hardware
    _rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict, repr=False)
    _sorted: dict[tuple[str, str, bool], list[dict[str, Any]]] = field(default_factory=dict, repr=False)
    _presence: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _names: frozenset[str] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: rendered pages for this inventory (see console/pages.py), bounded
    pages: dict[Any, Any] = field(default_factory=dict, repr=False)
    #: this view's number, never reused: a key naming it names this inventory
    serial: int = field(default_factory=lambda: next(_serials))

    def bucket(self, profile_id: str) -> dict[str, Any] | None:
        return next((v for v in self.vendors if v["profile_id"] == profile_id), None)

    def rows(self, profile_id: str) -> list[dict[str, Any]]:
        """The node table's rows for one hardware, built the first time its tab is shown."""
        with self._lock:
            found = self._rows.get(profile_id)
            if found is None:
                found = self._rows[profile_id] = _node_rows(self._nodes, profile_id)
            return found

    def sorted_rows(self, profile_id: str, column: str, key: Callable[[dict[str, Any]], Any], descending: bool) -> list[dict[str, Any]]:
        """``rows`` sorted by one column, kept per column and direction: paging a sorted table sorts nothing."""
        rows = self.rows(profile_id)
        with self._lock:
            found = self._sorted.get((profile_id, column, descending))
            if found is None:
                found = sorted(rows, key=lambda r: _sortable(key(r)), reverse=descending)
                self._sorted[(profile_id, column, descending)] = found
            return found

    def node_names(self) -> frozenset[str]:
        """Every node's name (kept: an action checks the node it names is one of them)."""
        with self._lock:
            if self._names is None:
                self._names = frozenset(n.name for n in self._nodes)
            return self._names

    def present(self, profile_id: str) -> list[str]:
        """Nodes that carry the hardware's presence labels."""
        with self._lock:
            found = self._presence.get(profile_id)
            if found is None:
                found = self._presence[profile_id] = [
                    n.name for n in self._nodes if any(h.profile_id == profile_id and h.present_by_labels for h in n.hardware)]
            return found


def build(overview: Any) -> InventoryView:
    """One walk over the nodes: the summary, the notes the CLI prints, who is not ready or cordoned, unknown VRAM."""
    summary = overview.summary()
    vendors = [b.to_dict() for b in overview.buckets]
    node_notes: list[tuple[str, str]] = []
    hardware_notes: list[tuple[str, str]] = []
    not_ready: list[str] = []
    cordoned: list[str] = []
    for n in overview.nodes:
        node_notes.extend((n.name, note) for note in n.notes)
        hardware_notes.extend((n.name, f"{h.profile_id}: {note}") for h in n.hardware for note in h.notes)
        if not n.ready:
            not_ready.append(n.name)
        if n.cordoned:
            cordoned.append(n.name)
    unknown = Unknown()
    for bucket in vendors:
        if bucket["accelerator"] and bucket["vram"]["devices_without_vram"]:
            unknown.devices += bucket["vram"]["devices_without_vram"]
            unknown.hardware.append(bucket["display_name"])
    return InventoryView(
        source=overview.source, dra_api=overview.dra_api, summary=summary, vendors=vendors,
        unsupported=[u.to_dict() for u in overview.unsupported], notes=list(overview.notes),
        objects=dict(overview.object_counts), node_notes=node_notes + hardware_notes, not_ready=not_ready,
        cordoned=cordoned, vram_unknown=unknown, network=[n.to_dict() for n in overview.network], _nodes=overview.nodes,
    )


def _node_rows(nodes: Any, profile_id: str) -> list[dict[str, Any]]:
    rows = []
    for n in nodes:
        for held in n.hardware:
            if held.profile_id != profile_id:
                continue
            status = "Ready" if n.ready else "NotReady"
            if n.cordoned:
                status += ", cordoned"
            c = held.counts
            rows.append({
                "name": n.name, "status": status, "ready": n.ready, "devices": c.devices, "partitions": c.partitions,
                "allocatable": c.allocatable, "allocated": c.allocated, "available": c.available,
                "vram": held.vram.total_bytes if held.vram.devices_known else None,
                "vram_unknown": held.vram.devices_unknown, "products": sorted(held.products),
                "holders": [f"{who} ({count})" for who, count in sorted(held.holders.items())],
                "notes": list(held.notes) + list(n.notes),
            })
    return rows


_lock = threading.Lock()
_serials = itertools.count()
#: id(inventory) -> (a weak reference to it, its view); an entry whose inventory is gone is dropped
_views: dict[int, tuple[weakref.ref[Any], InventoryView]] = {}
#: at most this many views (a fleet of snapshots, a watch's recent generations)
KEEP = 16


def cached_view(inventory: Any) -> InventoryView | None:
    """The inventory's view if it was built already (no work, safe on the event loop); else None."""
    with _lock:
        found = _views.get(id(inventory))
    return found[1] if found is not None and found[0]() is inventory else None


def view_of(inventory: Any) -> InventoryView:
    """The inventory's view, built on first use (call it from a worker thread: the first build walks every node)."""
    key = id(inventory)
    with _lock:
        found = _views.get(key)
        if found is not None and found[0]() is inventory:
            return found[1]
    view = build(inventory.overview)
    with _lock:
        found = _views.get(key)
        if found is not None and found[0]() is inventory:
            return found[1]  # built meanwhile by another request: keep one
        _views[key] = (weakref.ref(inventory, lambda _, key=key: _drop(key)), view)
        while len(_views) > KEEP:
            _views.pop(next(iter(_views)))
        return view


def _drop(key: int) -> None:
    with _lock:
        found = _views.get(key)
        if found is not None and found[0]() is None:
            _views.pop(key, None)


def forget() -> None:
    """Drop every view (tests)."""
    with _lock:
        _views.clear()
