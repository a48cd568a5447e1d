"""Where an inventory's objects come from: a live cluster, a saved snapshot, or the embedded demo.

The CLI fills a :class:`ClusterSource` from its options, the API from the environment
(``LENS_CLUSTER_SNAPSHOT``, ``LENS_CLUSTER_DEMO``, ``LENS_KUBE_CONTEXT``, ``LENS_KUBECONFIG``),
so both read the same cluster the same way. With nothing given, the source is the cluster
kubectl's current context points at, as with kubectl itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from llm_d_lens import settings
from llm_d_lens.cluster.objects import ClusterObjects
from llm_d_lens.errors import LensError
from llm_d_lens.runner import DEFAULT_TIMEOUT

if TYPE_CHECKING:  # a snapshot or the demo runs no tool: the runner's modules load only for a live read
    from llm_d_lens.runner import Runner

DEMO_SNAPSHOT = ("demo", "demo-cluster.json")
#: the embedded demo, opened by path as every bundled file is (a package installed as files, never zipped)
DEMO_SNAPSHOT_PATH = Path(__file__).resolve().parent.joinpath(*DEMO_SNAPSHOT)


class SourceConflict(LensError):
    code = "CLUSTER_SOURCE_CONFLICT"
    http_status = 400


class ClusterSource(msgspec.Struct, frozen=True):
    snapshot: Path | None = None
    demo: bool = False
    context: str | None = None
    kubeconfig: str | None = None
    timeout: float = DEFAULT_TIMEOUT

    def __post_init__(self) -> None:
        chosen = [name for name, given in (("a snapshot", self.snapshot is not None), ("the demo", self.demo)) if given]
        if len(chosen) > 1:
            raise SourceConflict("give a snapshot or the demo, not both")
        if chosen and (self.context or self.kubeconfig):
            raise SourceConflict(f"{chosen[0]} is read from a file; --context/--kubeconfig select a live cluster")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ClusterSource:
        snapshot = settings.text("LENS_CLUSTER_SNAPSHOT", env)
        timeout = settings.text("LENS_KUBECTL_TIMEOUT", env)
        return cls(
            snapshot=Path(snapshot) if snapshot else None,
            demo=settings.flag("LENS_CLUSTER_DEMO", env),
            context=settings.text("LENS_KUBE_CONTEXT", env),
            kubeconfig=settings.text("LENS_KUBECONFIG", env),
            timeout=_seconds(timeout) if timeout else DEFAULT_TIMEOUT,
        )

    @property
    def live(self) -> bool:
        return self.snapshot is None and not self.demo

    def describe(self) -> dict[str, Any]:
        if self.demo:
            return {"kind": "demo", "name": "embedded demo snapshot"}
        if self.snapshot is not None:
            return {"kind": "snapshot", "path": str(self.snapshot)}
        return {"kind": "live", "context": self.context, "kubeconfig": self.kubeconfig}

    def runner(self) -> Runner:
        return make_runner(self)

    def load(self, runner: Runner | None = None, *, partial: bool = False) -> ClusterObjects:
        """The source's objects; ``partial`` keeps only the fields the inventory reads (see :mod:`.decode`)."""
        if self.live:
            from llm_d_lens.cluster.live import fetch_sync  # asyncio and the runner: a live read's only

            return fetch_sync(runner or self.runner(), timeout=self.timeout, partial=partial)
        from llm_d_lens.cluster.snapshot import load_snapshot

        return load_snapshot(self.snapshot if self.snapshot is not None else DEMO_SNAPSHOT_PATH, partial=partial)


def cluster_source(cluster: str | None, clusters_file: Path | None, timeout: float, *, snapshot: Path | None,
                   demo: bool, context: str | None, kubeconfig: Path | None, context_flag: str = "context") -> ClusterSource:
    """What a cluster-reading command reads: ``--cluster``'s entry of the clusters file (read only then; any other
    source option beside it is a conflict, named as the command spells it: ``context_flag``), else the options."""
    if cluster is not None:
        from llm_d_lens.cluster.options import named_cluster

        named = named_cluster(cluster, clusters_file, **{"snapshot": snapshot, "demo": demo, context_flag: context,
                                                         "kubeconfig": kubeconfig})
        return named.source(timeout)  # type: ignore[union-attr]
    return ClusterSource(snapshot=snapshot, demo=demo, context=context, kubeconfig=kubeconfig, timeout=timeout)


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise SourceConflict(f"LENS_KUBECTL_TIMEOUT={value!r} is not a positive number of seconds")
    return seconds


def make_runner(source: ClusterSource) -> Runner:
    """The runner a live source uses; tests replace this to hand in a FakeRunner."""
    from llm_d_lens.runner import CommandRunner

    return CommandRunner(kubeconfig=source.kubeconfig, context=source.context, timeout=source.timeout)
