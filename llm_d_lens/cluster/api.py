"""``GET /api/v1/clusters/overview``: the inventory of the cluster this server is configured for.

The server reads one cluster, chosen by its environment (see :class:`ClusterSource.from_env`):
a snapshot (``LENS_CLUSTER_SNAPSHOT``), the demo (``LENS_CLUSTER_DEMO=1``) or a live cluster
(``LENS_KUBE_CONTEXT`` / ``LENS_KUBECONFIG``, else kubectl's current context). Clients cannot
point it at other files: a path in a query string would let anyone read the server's disk.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
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


@router.get("/clusters/overview")
async def overview(
    nodes: bool = Query(True, description="Include the per-node detail (large on big clusters)."),
    source: ClusterSource = Depends(cluster_source),
    runner: Runner | None = Depends(cluster_runner),
) -> dict[str, Any]:
    """Per-hardware buckets (devices, partitions, VRAM, allocation), nodes, and what no profile claims."""
    document = (await read_inventory(source, runner)).overview.to_dict()
    if not nodes:
        document.pop("nodes")
    return document


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
