"""The fleet as a server reads it: each member from the kept inventories, a watched cluster from memory.

The fleet itself (probing, members, totals) is the cluster domain's (``llm_d_lens/cluster/fleet.py``);
a server adds what it holds: a live cluster it watches with every kind in sync is reachable without
a probe, and a member's overview comes from :mod:`.inventories` (a snapshot parsed once while its
file is unchanged, a watched cluster from memory) with its freshness.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from llm_d_lens.cluster.clusters import Cluster
from llm_d_lens.cluster.fleet import PROBE_TIMEOUT, Member, Reachability
from llm_d_lens.cluster.fleet import read_member as read_cluster
from llm_d_lens.cluster.fleet import probe_all as probe_each
from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.runner import Runner
from llm_d_lens.serving.inventories import inventory
from llm_d_lens.serving.watched import freshness, watch_of


def watched_reachability(cluster: Cluster, source: ClusterSource) -> Reachability | None:
    """Reachable now when the server watches it with every kind in sync; None: probe it.

    A watch still listing or broken (a refused connection, or a kind the server may not read)
    does not tell, so that cluster is probed as any other.
    """
    watch = watch_of(source)
    if watch is None:
        return None
    status = watch.status()
    if status["state"] != "watching":
        return None
    return Reachability(cluster, True, f"watched: {len(status['kinds'])} kinds in sync")


async def probe_all(clusters: Sequence[Cluster], runners: Callable[[Cluster], Runner | None] = lambda _: None,
                    timeout: float = PROBE_TIMEOUT) -> list[Reachability]:
    """Every cluster probed at once, a watched one answered from its watch."""
    return await probe_each(clusters, runners, timeout, known=watched_reachability)


def read_held(source: ClusterSource, runner: Runner | None) -> tuple[dict[str, Any], float, dict[str, Any]]:
    """A member's overview from what the server holds (see :mod:`.inventories`), with its freshness.

    Without the per-node detail: the fleet reads each member's buckets and summary only, and
    walking 20 clusters' nodes per request would cost more than everything else together.
    """
    found = inventory(source, runner)
    return found.overview.to_dict(nodes=False), found.read_at, freshness(source, found)


def read_member(cluster: Cluster, timeout: float, runner: Runner | None = None) -> Member:
    """One cluster's overview from what the server holds; a failure is kept."""
    return read_cluster(cluster, timeout, runner, read_held)


async def gather_members(clusters: Sequence[Cluster], timeout: float,
                         runners: Callable[[Cluster], Runner | None] = lambda _: None) -> list[Member]:
    """Each cluster's overview in a worker thread, all at once: the event loop stays free."""
    return list(await asyncio.gather(*(asyncio.to_thread(read_member, c, timeout, runners(c)) for c in clusters)))
