"""Which cluster a driver call reads: the server's, a configured cluster by name, or a context.

The cluster is the server's: ``LENS_KUBE_CONTEXT`` / ``LENS_KUBECONFIG``, or with ``LENS_CLUSTERS``
its first configured cluster. The factories are the seams the API's routes depend on (tests
override them with a FakeRunner) and the console calls directly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llm_d_lens import settings
from llm_d_lens.errors import LensError
from llm_d_lens.monitoring.gpu_driver.kube import ClusterView


def view_factory() -> Callable[[str | None], ClusterView]:
    """The server's cluster, or a context a token holder chose; overridden in tests with a FakeRunner."""
    from llm_d_lens.runner import CommandRunner

    server_context = settings.text("LENS_KUBE_CONTEXT")
    kubeconfig = settings.text("LENS_KUBECONFIG")
    return lambda context: ClusterView(CommandRunner(kubeconfig=kubeconfig, context=context or server_context))


def named_view_factory() -> Callable[[Any], ClusterView]:
    """A configured cluster's view, its name the providers' cluster_id; overridden in tests with a FakeRunner."""
    from llm_d_lens.runner import CommandRunner

    return lambda cluster: ClusterView(CommandRunner(kubeconfig=cluster.kubeconfig, context=cluster.context),
                                       cluster_id=cluster.name)


class ClusterAndContext(LensError):
    code = "CLUSTER_SOURCE_CONFLICT"
    http_status = 400


def choose_view(cluster: str | None, context: str | None, views: Callable[[str | None], ClusterView],
                named: Callable[[Any], ClusterView]) -> ClusterView:
    """The view a request asks for: a configured cluster by name, a context (token checked by the caller), or the default."""
    from llm_d_lens.cluster.clusters import CLUSTERS_ENV
    from llm_d_lens.cluster.errors import LiveClusterNeeded
    from llm_d_lens.cluster.served import served_clusters

    if cluster is not None and context is not None:
        raise ClusterAndContext("give cluster (a configured cluster) or context, not both")
    if cluster is None and (context is not None or not settings.text(CLUSTERS_ENV)):
        return views(context)
    clusters = served_clusters()
    chosen = clusters.get(cluster) if cluster is not None else clusters.clusters[0]
    if not chosen.live:
        raise LiveClusterNeeded(f"cluster {chosen.name!r} is {'the demo' if chosen.demo else 'a snapshot'}; "
                                "drivers are read and installed on a live cluster",
                                details={"cluster": chosen.name, "kind": chosen.kind})
    return named(chosen)
