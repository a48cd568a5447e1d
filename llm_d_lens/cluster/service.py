"""One call from a cluster source to its overview, shared by the CLI, the API and the benchmark."""

from __future__ import annotations

from llm_d_lens.cluster.catalog import Catalog
from llm_d_lens.cluster.inventory import build_inventory
from llm_d_lens.cluster.model import Overview
from llm_d_lens.cluster.snapshot import gc_paused
from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.runner import Runner


def inspect(source: ClusterSource, runner: Runner | None = None, catalog: Catalog | None = None, *,
            until_exit: bool = False) -> Overview:
    """Read the source and count it, with the raw objects living and dying inside one GC pause.

    The parsed cluster is freed by reference counting before the collector resumes, so no
    collection ever walks its millions of objects (see :func:`snapshot.gc_paused`). A one-shot
    command passes ``until_exit``: then the ``lens`` console script never frees them at all
    (see :mod:`llm_d_lens.cli.lifetime`); anywhere else they are freed here as usual.
    """
    from llm_d_lens.cli.lifetime import keep_until_exit

    with gc_paused():
        objects = source.load(runner, partial=True)  # only the fields the inventory reads
        try:
            return build_inventory(objects, catalog, source=source.describe())
        finally:
            if until_exit:
                keep_until_exit(objects)
            del objects
