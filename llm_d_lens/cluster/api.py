"""``/api/v1/clusters`` and ``/api/v1/fleet``: the inventories of the clusters this server is configured for.

The server's clusters are its ``LENS_CLUSTERS`` file, else the one cluster its environment sets
(see :mod:`.served`): a snapshot (``LENS_CLUSTER_SNAPSHOT``), the demo (``LENS_CLUSTER_DEMO=1``) or
a live cluster (``LENS_KUBE_CONTEXT`` / ``LENS_KUBECONFIG``, else kubectl's current context).
``/clusters/overview`` reads the first of them. Clients name a configured cluster, never a context
or a file: a path in a query string would let anyone read the server's disk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, Query
from starlette.concurrency import run_in_threadpool

from llm_d_lens.cluster.clusters import Cluster, Clusters
from llm_d_lens.cluster.served import ORIGIN_ENV, kubectl_timeout, served_clusters
from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.runner import Runner

router = APIRouter(tags=["cluster"])


def cluster_source() -> ClusterSource:
    """The server's first (default) cluster."""
    return served_clusters().clusters[0].source(kubectl_timeout())


def cluster_runner() -> Runner | None:
    """None: the source builds a CommandRunner; tests override this with a FakeRunner."""
    return None


def configured_clusters() -> Clusters:
    return served_clusters()


def cluster_runners() -> Callable[[Cluster], Runner | None]:
    """Each named cluster's runner; None: its source builds a CommandRunner. Tests override this."""
    return lambda _cluster: None


@router.get("/clusters")
async def clusters(
    clusters: Clusters = Depends(configured_clusters),
    runners: Callable[[Cluster], Runner | None] = Depends(cluster_runners),
) -> dict[str, Any]:
    """The server's clusters (never other contexts or files), each with whether it answers now."""
    from llm_d_lens.cluster.fleet import probe_all

    found = await probe_all(clusters.clusters, runners)
    return {"origin": "environment" if clusters.origin == ORIGIN_ENV else "file",
            "clusters": [r.to_dict() for r in found]}


@router.get("/clusters/{name}/overview")
async def named_overview(
    name: str,
    nodes: bool = Query(True, description="Include the per-node detail (large on big clusters)."),
    clusters: Clusters = Depends(configured_clusters),
    runners: Callable[[Cluster], Runner | None] = Depends(cluster_runners),
) -> dict[str, Any]:
    """One configured cluster's overview, with the cluster's name, labels and when it was read; 404 for another name."""
    from llm_d_lens.cluster.watched import freshness

    cluster = clusters.get(name)
    source = cluster.source(kubectl_timeout())
    found = await read_inventory(source, runners(cluster))
    document = found.overview.to_dict()
    if not nodes:
        document.pop("nodes")
    return {"cluster": cluster.to_dict(), "readAt": found.read_at, "freshness": freshness(source, found), **document}


@router.get("/fleet/overview")
async def fleet_overview(
    cluster: list[str] = Query(default=[], description="Only these configured clusters (default: all)."),
    clusters: Clusters = Depends(configured_clusters),
    runners: Callable[[Cluster], Runner | None] = Depends(cluster_runners),
) -> dict[str, Any]:
    """Per hardware, totals across the clusters and each one's share; a cluster that cannot be read is listed with its error."""
    from llm_d_lens.cluster.fleet import fleet_document, gather_members

    return fleet_document(await gather_members(clusters.select(cluster), kubectl_timeout(), runners))


@router.get("/clusters/overview")
async def overview(
    nodes: bool = Query(True, description="Include the per-node detail (large on big clusters)."),
    source: ClusterSource = Depends(cluster_source),
    runner: Runner | None = Depends(cluster_runner),
) -> dict[str, Any]:
    """Per-hardware buckets (devices, partitions, VRAM, allocation), nodes, and what no profile claims."""
    from llm_d_lens.cluster.watched import freshness

    found = await read_inventory(source, runner)
    document = found.overview.to_dict()
    if not nodes:
        document.pop("nodes")
    return {**document, "freshness": freshness(source, found)}


async def read_inventory(source: ClusterSource, runner: Runner | None) -> Any:
    """The server's inventory (see :mod:`.cache`); a broken configured snapshot is the server's 503. Shared with the console."""
    from llm_d_lens.cluster.cache import inventory
    from llm_d_lens.errors import LensError, ServerNotConfigured

    # kubectl, parsing and counting run in a worker thread: the event loop stays free meanwhile.
    try:
        return await run_in_threadpool(inventory, source, runner)
    except LensError as exc:
        if source.snapshot is None:
            raise
        # the snapshot is the server's configuration, not anything the caller sent
        raise ServerNotConfigured(f"the server's LENS_CLUSTER_SNAPSHOT cannot be used: {exc.message}",
                                  details={"cause": exc.code, **exc.details}) from None
