"""The clusters a server reads: its ``LENS_CLUSTERS`` file, else the one cluster its environment sets.

A server never reads clusters a client invents: a request names one of these, and only these are
readable without the API token. Without ``LENS_CLUSTERS`` the server does *not* expose every context
of its kubeconfig (that would let an anonymous caller read each cluster the server can reach);
it serves the one cluster ``LENS_CLUSTER_SNAPSHOT``, ``LENS_CLUSTER_DEMO`` or ``LENS_KUBE_CONTEXT`` /
``LENS_KUBECONFIG`` sets, as before, named ``demo``, ``snapshot``, the context, or ``default``.
The first cluster is the one ``/api/v1/clusters/overview`` and the console read by default.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from llm_d_lens import settings
from llm_d_lens.cluster.clusters import CLUSTERS_ENV, Cluster, Clusters, load_file
from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.errors import LensError, ServerNotConfigured
from llm_d_lens.runner import Runner

#: what the CLI's words for a source are on the server: the environment variables that set them
SERVER_SETTINGS = {"--context": "LENS_KUBE_CONTEXT", "--kubeconfig": "LENS_KUBECONFIG",
                   "a snapshot": "a snapshot (LENS_CLUSTER_SNAPSHOT)", "the demo": "the demo (LENS_CLUSTER_DEMO)"}
SINGLE_SETTINGS = ("LENS_CLUSTER_SNAPSHOT", "LENS_CLUSTER_DEMO", "LENS_KUBE_CONTEXT", "LENS_KUBECONFIG")
ORIGIN_ENV = "the server's environment"
ORIGIN_FILE = "the server's clusters (LENS_CLUSTERS)"


def served_clusters(env: Mapping[str, str] | None = None) -> Clusters:
    """The server's clusters; anything wrong with their configuration is the server's 503, not the caller's 4xx."""
    env = os.environ if env is None else env
    path = settings.text(CLUSTERS_ENV, env) or ""
    if path:
        chosen = [name for name in SINGLE_SETTINGS if env.get(name, "").strip() and env.get(name, "").strip() != "0"]
        if chosen:
            raise ServerNotConfigured(f"the cluster API is misconfigured on the server: {CLUSTERS_ENV} names the "
                                      f"server's clusters, but {', '.join(chosen)} is set too; unset one of them")
        try:
            found = load_file(Path(os.path.expanduser(path)))
        except LensError as exc:
            raise ServerNotConfigured(f"the cluster API is misconfigured on the server ({CLUSTERS_ENV}): {exc.message}",
                                      details={"cause": exc.code, **exc.details}) from None
        return Clusters(found.clusters, ORIGIN_FILE)  # a caller is not told where the file lives
    source = server_source(env)
    name = "demo" if source.demo else "snapshot" if source.snapshot is not None else source.context or "default"
    single = Cluster(name=name, display_name=name, context=source.context, kubeconfig=source.kubeconfig,
                     snapshot=source.snapshot, demo=source.demo)
    return Clusters((single,), ORIGIN_ENV)


def server_source(env: Mapping[str, str] | None = None) -> ClusterSource:
    """:meth:`ClusterSource.from_env`, its errors worded for the operator (variables, not flags)."""
    from llm_d_lens.web.request_fields import reword

    try:
        return ClusterSource.from_env(env)
    except LensError as exc:
        message = reword(exc, SERVER_SETTINGS).message
        raise ServerNotConfigured(f"the cluster API is misconfigured on the server: {message}") from None


def kubectl_timeout(env: Mapping[str, str] | None = None) -> float:
    """``LENS_KUBECTL_TIMEOUT`` for every served cluster."""
    return server_source({k: v for k, v in (os.environ if env is None else env).items()
                          if k == "LENS_KUBECTL_TIMEOUT"}).timeout


# -- what a route depends on: overridden in tests (a FakeRunner, another source) ---------------

#: what :func:`served_clusters` reads from the environment
_SOURCE_SETTINGS = (CLUSTERS_ENV, *SINGLE_SETTINGS, "LENS_KUBECTL_TIMEOUT")
_last_source: tuple[tuple[object, ...], ClusterSource] | None = None


def settings_key() -> tuple[object, ...]:
    """What the served clusters are worked out from: the settings, and the ``LENS_CLUSTERS`` file's identity.

    The same key is the same clusters: a cache of anything derived from them may be keyed on it.
    The file is named by its device, inode, size and modification time (one ``stat``); a file
    that cannot be read ends the key in None: nothing keyed so is kept, so its error is met again.
    """
    values = tuple(os.environ.get(name) for name in _SOURCE_SETTINGS)
    path = (values[0] or "").strip()
    if not path:
        return (*values, "no file")
    try:
        found = os.stat(os.path.expanduser(path))
    except OSError:
        return (*values, None)
    return (*values, (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns))


def cluster_source() -> ClusterSource:
    """The server's first (default) cluster; worked out again only when :func:`settings_key` changes.

    Every overview request asks for it, and working it out from the environment cost a cached
    answer about as much as the rest of the route.
    """
    global _last_source
    key = settings_key()
    last = _last_source
    if last is not None and last[0] == key and key[-1] is not None:
        return last[1]
    source = served_clusters().clusters[0].source(kubectl_timeout())
    _last_source = (key, source)
    return source


def cluster_runner() -> Runner | None:
    """None: the source builds a CommandRunner; tests override this with a FakeRunner."""
    return None


def configured_clusters() -> Clusters:
    return served_clusters()


def cluster_runners() -> Callable[[Cluster], Runner | None]:
    """Each named cluster's runner; None: its source builds a CommandRunner. Tests override this."""
    return lambda _cluster: None
