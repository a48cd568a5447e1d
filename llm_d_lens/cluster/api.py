"""``GET /api/v1/clusters/overview``: the inventory of the cluster this server is configured for.

The server reads one cluster, chosen by its environment (see :class:`ClusterSource.from_env`):
a snapshot (``LENS_CLUSTER_SNAPSHOT``), the demo (``LENS_CLUSTER_DEMO=1``) or a live cluster
(``LENS_KUBE_CONTEXT`` / ``LENS_KUBECONFIG``, else kubectl's current context). Clients cannot
point it at other files: a path in a query string would let anyone read the server's disk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.runner import Runner

router = APIRouter(tags=["cluster"])


#: what the CLI's words for a source are on the server: the environment variables that set them
SERVER_SETTINGS = {"--context": "LENS_KUBE_CONTEXT", "--kubeconfig": "LENS_KUBECONFIG",
                   "a snapshot": "a snapshot (LENS_CLUSTER_SNAPSHOT)", "the demo": "the demo (LENS_CLUSTER_DEMO)"}


def cluster_source() -> ClusterSource:
    from llm_d_lens.api.request_fields import reword
    from llm_d_lens.errors import LensError, ServerNotConfigured

    try:
        return ClusterSource.from_env()
    except LensError as exc:
        message = reword(exc, SERVER_SETTINGS).message
        raise ServerNotConfigured(f"the cluster API is misconfigured on the server: {message}") from None


def cluster_runner() -> Runner | None:
    """None: the source builds a CommandRunner; tests override this with a FakeRunner."""
    return None


@router.get("/clusters/overview", response_model=dict[str, Any],
            responses={304: {"description": "The client's copy (If-None-Match names its ETag) is current."}})
async def overview(
    request: Request,
    nodes: bool = Query(True, description="Include the per-node detail (large on big clusters)."),
) -> Response:
    """Per-hardware buckets (devices, partitions, VRAM, allocation), nodes, and what no profile claims.

    A snapshot's (or the demo's) answer is encoded once while the file is unchanged and carries an
    ``ETag``; send it back in ``If-None-Match`` to get ``304 Not Modified`` instead of the document.
    """
    from llm_d_lens.cluster.cache import encoded_if_kept
    from llm_d_lens.conditional import respond

    source, runner = inline_dependency(request, cluster_source), inline_dependency(request, cluster_runner)
    ready = encoded_if_kept(source, nodes) if runner is None else None
    if ready is not None:  # an unchanged snapshot, answered before: no worker thread needed
        return respond(request, ready)
    found = await read_inventory(source, runner)
    encoded = await run_in_threadpool(found.encoded, nodes)  # once per kept inventory; a large one takes a moment
    return respond(request, encoded)


def inline_dependency(request: Request, dependency: Callable[[], Any]) -> Any:
    """A cheap sync dependency called on the event loop, honouring ``app.dependency_overrides`` as ``Depends`` does.

    ``Depends`` runs a sync dependency in a worker thread: two thread hops per request were most of
    what a cached overview cost. Only for dependencies that do no I/O (reading the environment).
    """
    return request.app.dependency_overrides.get(dependency, dependency)()


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
