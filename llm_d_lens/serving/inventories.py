"""The last inventories of file-backed sources (up to :data:`KEEP`), each kept while its file is unchanged.

A snapshot (or the demo) is the same cluster until its file changes, so re-parsing it for every
request or page only costs time: on a 5,000-node snapshot, seconds each. The key is the file's
identity (path, size, modification time) and the registry's version, so an edited snapshot or a
newly installed plugin is read afresh. A live cluster is never cached here: it changes under us.

Rebuilds are single-flight per source: requests that arrive while a file-backed source is being read
wait for that one read instead of each parsing the file again (on a big snapshot, N parses at once would
also hold N parsed clusters in memory). Each kept inventory also keeps its overview encoded as JSON
(with and without nodes), so a second request serves bytes without walking the overview again.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool

from llm_d_lens.cluster.model import Overview, dumps
from llm_d_lens.cluster.source import DEMO_SNAPSHOT_PATH, ClusterSource
from llm_d_lens.errors import LensError, ServerNotConfigured
from llm_d_lens.runner import Runner

if TYPE_CHECKING:
    from llm_d_lens.web.conditional import Encoded


@dataclass(frozen=True)
class Inventory:
    overview: Overview
    read_at: float  # Unix seconds when the source was read
    _encoded: dict[bool, Encoded] = field(default_factory=dict, repr=False, compare=False)
    _named: dict[tuple[str, bool], Encoded] = field(default_factory=dict, repr=False, compare=False)
    _encoding: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def encoded(self, nodes: bool = True, freshness: dict[str, Any] | None = None) -> Encoded:
        """The overview as the API's JSON bytes and their ETag; encoded once per inventory and shape.

        ``freshness`` (how fresh the answer is) is written with the first encoding: a kept file's
        never changes while it is kept.
        """
        with self._encoding:  # concurrent first requests encode once
            found = self._encoded.get(nodes)
            if found is None:
                found = self._encoded[nodes] = self._encode(nodes, freshness)
            return found

    def _encode(self, nodes: bool, freshness: dict[str, Any] | None) -> Encoded:
        from llm_d_lens.web.conditional import tagged

        return tagged(self.body(nodes, None, freshness))

    def encoded_named(self, cluster: dict[str, Any], nodes: bool = True,
                      freshness: dict[str, Any] | None = None) -> Encoded:
        """A named cluster's overview (``/clusters/{name}/overview``: its entry, ``read_at``, the overview) as bytes.

        Kept per entry and shape, so a second request for an unchanged snapshot encodes nothing.
        """
        from llm_d_lens.web.conditional import tagged

        key = (json.dumps(cluster, sort_keys=True), nodes)
        with self._encoding:
            found = self._named.get(key)
            if found is None:
                found = self._named[key] = tagged(self.body(nodes, {"cluster": cluster, "read_at": self.read_at},
                                                            freshness))
            return found

    def body(self, nodes: bool = True, head: dict[str, Any] | None = None,
             freshness: dict[str, Any] | None = None) -> bytes:
        """The bytes of ``encode({**head, **self.document(nodes, freshness)})``, each node's part
        encoded once per record (``NodeRecord.json``): an answer after an event re-encodes the
        overview's head and the nodes that changed, not every node."""
        parts = [b'"%s":%s' % (key.encode(), dumps(value)) for key, value in (head or {}).items()]
        overview = self.overview
        for key, value in overview.to_dict(nodes=False).items():
            parts.append(b'"%s":%s' % (key.encode(), dumps(value)))
            if key == "vendors" and nodes:
                records = overview.nodes_json()
                if not records:
                    parts.append(b'"nodes":[]')
                    continue
                parts.append(b'"nodes":[' + records[0])
                parts.extend(islice(records, 1, None))  # one join below: the megabytes are copied once
                parts[-1] += b"]"
        if freshness is not None:
            parts.append(b'"freshness":' + dumps(freshness))
        parts[0] = b"{" + parts[0]
        parts[-1] += b"}"
        return b",".join(parts)

    def document(self, nodes: bool = True, freshness: dict[str, Any] | None = None) -> dict[str, Any]:
        """The overview as the API answers it: without the per-node detail unless ``nodes``, with ``freshness`` last."""
        document = self.overview.to_dict()
        if not nodes:
            document.pop("nodes")
        if freshness is not None:
            document["freshness"] = freshness
        return document


_lock = threading.Lock()
#: file key -> inventory, the most recently used last; a fleet of snapshots keeps each of them
_kept: dict[Any, Inventory] = {}
KEEP = 8
#: file key -> the lock held while that source is read: one read per source, the rest wait for it
#: (different sources are read side by side, as a fleet's members are)
_building: dict[Any, threading.Lock] = {}


@functools.cache
def _demo_path() -> str:
    """Where the installed demo snapshot is; working it out was a third of a cached demo answer's cost."""
    return str(DEMO_SNAPSHOT_PATH)


def _file_key(source: ClusterSource) -> Any:
    from llm_d_lens.hardware.registry import get_registry

    if source.demo:
        path = _demo_path()
    elif source.snapshot is not None:
        path = str(source.snapshot)
    else:
        return None
    try:
        stat = os.stat(path)
    except OSError:
        return None  # let the read itself report what is wrong with the path
    return (path, stat.st_size, stat.st_mtime_ns, stat.st_ino, _version(get_registry()))


_versions: tuple[Any, str] | None = None


def _version(registry: Any) -> str:
    """The registry's version hash, computed once per registry: its profiles are fixed when it is built."""
    global _versions
    known = _versions
    if known is not None and known[0] is registry:
        return known[1]
    version = registry.version_hash()
    _versions = (registry, version)
    return version


def encoded_if_kept(source: ClusterSource, nodes: bool = True) -> Encoded | None:
    """The kept overview's bytes, if the source is file-backed, unchanged and already encoded; else None.

    Costs one ``stat``, so a request for an unchanged snapshot is answered without a worker thread.
    """
    key = _file_key(source)
    kept = _lookup(key) if key is not None else None
    return kept._encoded.get(nodes) if kept is not None else None


def kept_inventory(source: ClusterSource, runner: Runner | None = None) -> Inventory | None:
    """The kept inventory of an unchanged file-backed source, or None (read it with :func:`read_inventory`).

    Costs one ``stat``: the console's pages answer an unchanged snapshot without a worker thread.
    """
    if source.live or runner is not None:
        return None
    key = _file_key(source)
    return _lookup(key) if key is not None else None


def inventory(source: ClusterSource, runner: Runner | None = None) -> Inventory:
    """The source's overview and when it was read; a file-backed source's is reused while the file is unchanged."""
    from llm_d_lens.cluster.service import inspect

    if source.live:  # a live cluster the server watches is answered from memory (see .watched)
        from llm_d_lens.serving.watched import watched_inventory

        watched = watched_inventory(source)
        if watched is not None:
            return watched
    key = _file_key(source) if runner is None else None
    if key is None:
        return Inventory(inspect(source, runner), time.time())
    kept = _lookup(key)
    if kept is not None:
        return kept
    with _lock:
        building = _building.setdefault(key, threading.Lock())
    with building:
        kept = _lookup(key)  # read by the request this one waited for
        if kept is not None:
            return kept
        found = Inventory(inspect(source, runner), time.time())
        with _lock:
            _kept[key] = found
            while len(_kept) > KEEP:
                _kept.pop(next(iter(_kept)))
            _building.pop(key, None)  # later readers find the inventory; waiters hold their own reference
        return found


def _lookup(key: Any) -> Inventory | None:
    """The kept inventory for this file key, marked most recently used; None if not kept."""
    with _lock:
        found = _kept.pop(key, None)
        if found is not None:
            _kept[key] = found
        return found


def forget() -> None:
    """Drop the kept inventories (tests, and a server told to re-read)."""
    with _lock:
        _kept.clear()


async def read_inventory(source: ClusterSource, runner: Runner | None) -> Any:
    """The server's inventory (see :func:`inventory`); a broken configured snapshot is the server's 503. Shared with the console."""
    # kubectl, parsing and counting run in a worker thread: the event loop stays free meanwhile.
    try:
        return await run_in_threadpool(inventory, source, runner)
    except LensError as exc:
        if source.snapshot is None:
            raise
        # the snapshot is the server's configuration, not anything the caller sent
        raise ServerNotConfigured(f"the server's LENS_CLUSTER_SNAPSHOT cannot be used: {exc.message}",
                                  details={"cause": exc.code, **exc.details}) from None
