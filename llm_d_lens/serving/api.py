"""``/api/v1/clusters`` and ``/api/v1/fleet``: the inventories of the clusters this server is configured for.

The server's clusters are its ``LENS_CLUSTERS`` file, else the one cluster its environment sets
(see :mod:`llm_d_lens.cluster.served`): a snapshot (``LENS_CLUSTER_SNAPSHOT``), the demo (``LENS_CLUSTER_DEMO=1``) or
a live cluster (``LENS_KUBE_CONTEXT`` / ``LENS_KUBECONFIG``, else kubectl's current context).
``/clusters/overview`` reads the first of them. Clients name a configured cluster, never a context
or a file: a path in a query string would let anyone read the server's disk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from llm_d_lens.cluster.clusters import Cluster, Clusters
from llm_d_lens.cluster.fleet import fleet_document
from llm_d_lens.cluster.served import (
    ORIGIN_ENV,
    cluster_runner,
    cluster_runners,
    cluster_source,
    configured_clusters,
    kubectl_timeout,
)
from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.runner import Runner
from llm_d_lens.serving.fleet import gather_members, probe_all
from llm_d_lens.serving.inventories import encoded_if_kept, read_inventory
from llm_d_lens.serving.watched import freshness
from llm_d_lens.web.conditional import Encoded, encode, respond

router = APIRouter(tags=["cluster"])


NODES_HELP = "Include the per-node detail (large on big clusters)."


@router.get("/clusters/overview", response_model=dict[str, Any],
            responses={304: {"description": "The client's copy (If-None-Match names its ETag) is current."}})
async def overview(
    request: Request,
    nodes: bool = Query(True, description=NODES_HELP),
    source: ClusterSource = Depends(cluster_source),
    runner: Runner | None = Depends(cluster_runner),
) -> Response:
    """Per-hardware buckets (devices, partitions, VRAM, allocation), nodes, and what no profile claims.

    A snapshot's (or the demo's) answer is encoded once while the file is unchanged and carries an
    ``ETag``; send it back in ``If-None-Match`` to get ``304 Not Modified`` instead of the document.
    """

    ready = encoded_if_kept(source, nodes) if runner is None else None
    if ready is not None:  # an unchanged snapshot, answered before: no worker thread needed
        return respond(request, ready)
    found = await read_inventory(source, runner)
    if source.live:  # a live answer's freshness (its age) changes from one request to the next
        return respond(request, await run_in_threadpool(_encoded_live, source, found, nodes))
    # once per kept inventory (a large one takes a moment); a file's freshness is fixed while it is kept
    encoded = await run_in_threadpool(found.encoded, nodes, freshness(source, found))
    return respond(request, encoded)


@router.get("/clusters")
async def clusters(
    clusters: Clusters = Depends(configured_clusters),
    runners: Callable[[Cluster], Runner | None] = Depends(cluster_runners),
) -> dict[str, Any]:
    """The server's clusters (never other contexts or files), each with whether it answers now."""

    found = await probe_all(clusters.clusters, runners)
    return {"origin": "environment" if clusters.origin == ORIGIN_ENV else "file",
            "clusters": [r.to_dict() for r in found]}


@router.get("/clusters/{name}/overview", response_model=dict[str, Any],
            responses={304: {"description": "The client's copy (If-None-Match names its ETag) is current."}})
async def named_overview(
    request: Request,
    name: str,
    nodes: bool = Query(True, description=NODES_HELP),
    clusters: Clusters = Depends(configured_clusters),
    runners: Callable[[Cluster], Runner | None] = Depends(cluster_runners),
) -> Response:
    """One configured cluster's overview, with the cluster's name, labels and when it was read; 404 for another name.

    Like ``/clusters/overview``: a snapshot's answer is encoded once while the file is unchanged,
    with an ``ETag`` that ``If-None-Match`` turns into ``304 Not Modified``; a live one is encoded
    per request with how fresh it is and a weak tag over the cluster's state.
    """

    cluster = clusters.get(name)
    source = cluster.source(kubectl_timeout())
    found = await read_inventory(source, runners(cluster))
    entry = cluster.to_dict()
    if source.live:
        head = {"cluster": entry, "read_at": found.read_at}
        return respond(request, await run_in_threadpool(_encoded_live, source, found, nodes, head))
    return respond(request, await run_in_threadpool(found.encoded_named, entry, nodes, freshness(source, found)))


@router.get("/fleet/overview")
async def fleet_overview(
    cluster: list[str] = Query(default=[], description="Only these configured clusters (default: all)."),
    clusters: Clusters = Depends(configured_clusters),
    runners: Callable[[Cluster], Runner | None] = Depends(cluster_runners),
) -> dict[str, Any]:
    """Per hardware, totals across the clusters and each one's share; a cluster that cannot be read is listed with its error."""

    return fleet_document(await gather_members(clusters.select(cluster), kubectl_timeout(), runners))


def _encoded_live(source: ClusterSource, found: Any, nodes: bool, head: dict[str, Any] | None = None) -> Any:
    """A live cluster's overview with how fresh it is now, encoded for this request alone.

    Its age (and a named cluster's ``read_at``) changes from one request to the next while the
    cluster does not, so the tag is weak and covers the overview alone: a client holding the same
    cluster state gets a 304 (RFC 9110's weak validator: the same content, not the same bytes).
    The body is the bytes of ``{**head, **overview, "freshness": ...}``, the overview encoded once.
    """

    state = found.encoded(nodes)  # once per inventory: the next answer after an event encodes only what changed
    opening = encode(head).body[:-1] + b"," if head else b"{"
    tail = encode({"freshness": freshness(source, found)}).body[1:]  # b'"freshness":{...}}'
    # one join: the overview's megabytes are copied once (a view of them, not a slice, goes in)
    with memoryview(state.body) as overview:
        return Encoded(b"".join((opening, overview[1:-1], b",", tail)), f"W/{state.etag}")
