"""One call from a cluster source to its overview, shared by the CLI, the API and the benchmark."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from llm_d_lens.cluster.catalog import Catalog
from llm_d_lens.cluster.inventory import build_inventory
from llm_d_lens.cluster.model import Overview
from llm_d_lens.cluster.snapshot import gc_paused
from llm_d_lens.cluster.source import ClusterSource

if TYPE_CHECKING:  # a snapshot or the demo runs no tool: the runner's modules load only for a live read
    from llm_d_lens.runner import Runner


def inspect(source: ClusterSource, runner: Runner | None = None, catalog: Catalog | None = None, *,
            keep: Callable[[Any], None] | None = None) -> Overview:
    """Read the source and count it, with the raw objects living and dying inside one GC pause.

    The parsed cluster is freed by reference counting before the collector resumes, so no
    collection ever walks its millions of objects (see :func:`snapshot.gc_paused`). A one-shot
    command's edge may pass ``keep`` (the console script's
    :func:`~llm_d_lens.terminal.lifetime.keep_until_exit`), which is handed the parsed objects
    instead; otherwise they are freed here as usual.
    """
    with gc_paused():
        objects = source.load(runner, partial=True)  # only the fields the inventory reads
        try:
            return build_inventory(objects, catalog, source=source.describe())
        finally:
            if keep is not None:
                keep(objects)
            del objects
