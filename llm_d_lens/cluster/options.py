"""What ``--cluster NAME`` and ``--clusters FILE`` name (the options are declared in ``terminal/options.py``).

A name picks one of the user's clusters (see :mod:`.clusters`); it stands for ``--context`` /
``--kubeconfig`` (a live cluster) or a snapshot or the demo, so giving both is a conflict, never a
silent choice of one.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:  # imported where used: a command that only declares the options (deploy render) never loads them
    from llm_d_lens.cluster.clusters import Cluster, Clusters



def user_clusters(clusters_file: Path | None, kubeconfig: str | Path | None = None) -> Clusters:
    from llm_d_lens.cluster import clusters

    return clusters.load(clusters_file, kubeconfig=str(kubeconfig) if kubeconfig else None)


def named_cluster(name: str | None, clusters_file: Path | None, **given: object) -> Cluster | None:
    """The cluster ``--cluster`` names (None without it); a conflict when another source option is given too."""
    if name is None:
        return None
    chosen = [f"--{flag.replace('_', '-')}" for flag, value in given.items() if value]
    if chosen:
        from llm_d_lens.cluster.source import SourceConflict

        raise SourceConflict(f"--cluster {name} names a cluster; drop {', '.join(chosen)} (or --cluster)")
    return user_clusters(clusters_file).get(name)


class LiveTarget(msgspec.Struct, frozen=True):
    """The kubeconfig context and file a live command runs kubectl with, and the cluster's name for providers."""

    context: str | None
    kubeconfig: str | None
    cluster_id: str | None


def live_target(name: str | None, clusters_file: Path | None, context: str | None,
                kubeconfig: str | Path | None, *, why: str) -> LiveTarget:
    """``--cluster`` for a command that needs a live cluster (``why`` says what it reads)."""
    from llm_d_lens.cluster.errors import LiveClusterNeeded

    cluster = named_cluster(name, clusters_file, context=context, kubeconfig=kubeconfig)
    if cluster is None:
        return LiveTarget(context, str(kubeconfig) if kubeconfig else None, context)
    if not cluster.live:
        raise LiveClusterNeeded(f"cluster {cluster.name!r} is {'the demo' if cluster.demo else 'a snapshot'}; {why} needs a live cluster",
                                details={"cluster": cluster.name, "kind": cluster.kind})
    return LiveTarget(cluster.context, cluster.kubeconfig, cluster.name)
