"""``/api/v1/clusters`` and ``/api/v1/fleet``: the inventories of the clusters this server is configured for.

The server's clusters are its ``LENS_CLUSTERS`` file, else the one cluster its environment sets
(see :mod:`.served`): a snapshot (``LENS_CLUSTER_SNAPSHOT``), the demo (``LENS_CLUSTER_DEMO=1``) or
a live cluster (``LENS_KUBE_CONTEXT`` / ``LENS_KUBECONFIG``, else kubectl's current context).
``/clusters/overview`` reads the first of them. Clients name a configured cluster, never a context
or a file: a path in a query string would let anyone read the server's disk.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from llm_d_lens.cluster.clusters import CLUSTERS_ENV, Cluster, Clusters
from llm_d_lens.cluster.served import ORIGIN_ENV, SINGLE_SETTINGS, kubectl_timeout, served_clusters
from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.runner import Runner

router = APIRouter(tags=["cluster"])


#: what :func:`cluster_source` reads from the environment (a LENS_CLUSTERS file is read every time)
_SOURCE_SETTINGS = (CLUSTERS_ENV, *SINGLE_SETTINGS, "LENS_KUBECTL_TIMEOUT")
_last_source: tuple[tuple[str | None, ...], ClusterSource] | None = None


def cluster_source() -> ClusterSource:
    """The server's first (default) cluster; worked out again only when the settings it comes from change.

    Every overview request asks for it, and working it out from the environment cost a cached
    answer about as much as the rest of the route; a ``LENS_CLUSTERS`` file is read each time.
    """
    global _last_source
    settings = tuple(os.environ.get(name) for name in _SOURCE_SETTINGS)
    last = _last_source
    if last is not None and last[0] == settings:
        return last[1]
    source = served_clusters().clusters[0].source(kubectl_timeout())
    _last_source = None if settings[0] else (settings, source)
    return source


def cluster_runner() -> Runner | None:
    """None: the source builds a CommandRunner; tests override this with a FakeRunner."""
    return None


def configured_clusters() -> Clusters:
    return served_clusters()


def cluster_runners() -> Callable[[Cluster], Runner | None]:
    """Each named cluster's runner; None: its source builds a CommandRunner. Tests override this."""
    return lambda _cluster: None


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
    from llm_d_lens.cluster.cache import encoded_if_kept
    from llm_d_lens.cluster.watched import freshness
    from llm_d_lens.web.conditional import respond

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
    from llm_d_lens.cluster.fleet import probe_all

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
    from llm_d_lens.cluster.watched import freshness
    from llm_d_lens.web.conditional import respond

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
    from llm_d_lens.cluster.fleet import fleet_document, gather_members

    return fleet_document(await gather_members(clusters.select(cluster), kubectl_timeout(), runners))


def _encoded_live(source: ClusterSource, found: Any, nodes: bool, head: dict[str, Any] | None = None) -> Any:
    """A live cluster's overview with how fresh it is now, encoded for this request alone.

    Its age (and a named cluster's ``read_at``) changes from one request to the next while the
    cluster does not, so the tag is weak and covers the overview alone: a client holding the same
    cluster state gets a 304 (RFC 9110's weak validator: the same content, not the same bytes).
    The body is the bytes of ``{**head, **overview, "freshness": ...}``, the overview encoded once.
    """
    from llm_d_lens.cluster.watched import freshness
    from llm_d_lens.web.conditional import Encoded, encode

    state = encode(found.document(nodes))
    opening = encode(head).body[:-1] + b"," if head else b"{"
    tail = encode({"freshness": freshness(source, found)}).body[1:]  # b'"freshness":{...}}'
    return Encoded(opening + state.body[1:-1] + b"," + tail, f"W/{state.etag}")


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
