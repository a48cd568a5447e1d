"""The last inventory of a file-backed source, kept while the file is unchanged.

A snapshot (or the demo) is the same cluster until its file changes, so re-parsing it for every
request or page only costs time: on a 5,000-node snapshot, seconds each. The key is the file's
identity (path, size, modification time) and the registry's version, so an edited snapshot or a
newly installed plugin is read afresh. A live cluster is never cached here: it changes under us.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from importlib import resources
from typing import Any

from llm_d_lens.cluster.model import Overview
from llm_d_lens.cluster.source import DEMO_SNAPSHOT, ClusterSource
from llm_d_lens.runner import Runner


@dataclass(frozen=True)
class Inventory:
    overview: Overview
    read_at: float  # Unix seconds when the source was read


_lock = threading.Lock()
#: file key -> inventory, the most recently used last; a fleet of snapshots keeps each of them
_kept: dict[Any, Inventory] = {}
KEEP = 8


def _file_key(source: ClusterSource) -> Any:
    from llm_d_lens.hardware.registry import get_registry

    if source.demo:
        path = str(resources.files("llm_d_lens.cluster").joinpath(*DEMO_SNAPSHOT))
    elif source.snapshot is not None:
        path = str(source.snapshot)
    else:
        return None
    try:
        stat = os.stat(path)
    except OSError:
        return None  # let the read itself report what is wrong with the path
    return (path, stat.st_size, stat.st_mtime_ns, stat.st_ino, get_registry().version_hash())


def inventory(source: ClusterSource, runner: Runner | None = None) -> Inventory:
    """The source's overview and when it was read; a file-backed source's is reused while the file is unchanged."""
    from llm_d_lens.cluster.service import inspect

    if source.live:  # a live cluster the server watches is answered from memory (see .watched)
        from llm_d_lens.cluster.watched import watched_inventory

        watched = watched_inventory(source)
        if watched is not None:
            return watched
    key = _file_key(source) if runner is None else None
    if key is not None:
        with _lock:
            if key in _kept:
                _kept[key] = _kept.pop(key)
                return _kept[key]
    found = Inventory(inspect(source, runner), time.time())
    if key is not None:
        with _lock:
            _kept[key] = found
            while len(_kept) > KEEP:
                _kept.pop(next(iter(_kept)))
    return found


def forget() -> None:
    """Drop the kept inventories (tests, and a server told to re-read)."""
    with _lock:
        _kept.clear()
