"""Clusters by name: a clusters file, or else the kubeconfig's contexts.

A clusters file (YAML; ``--clusters`` or ``LENS_CLUSTERS``, else ``$XDG_CONFIG_HOME/lens/clusters.yaml``)
names the clusters a user works with, each one a kubeconfig context (optionally with its own
kubeconfig file), a snapshot file, or the embedded demo, with a display name and labels::

    clusters:
      - name: us-east
        display_name: US East (production)
        labels: {region: us-east-1, environment: prod}
        context: prod-us-east1
        kubeconfig: ~/.kube/prod.yaml       # optional; relative paths are the file's
      - name: lab
        snapshot: lab-snapshot.json.gz
      - name: demo
        demo: true

The file is strict like every Lens file: an unknown key, a name given twice, a missing snapshot or
a cluster that is two things at once is a coded error naming the file and the field. Without a
file, every context of the kubeconfig is a cluster of that name, as for kubectl itself.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_d_lens.cluster.errors import ClustersFileInvalid, ClusterUnknown, show_value
from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.errors import clip
from llm_d_lens.runner import DEFAULT_TIMEOUT, Runner

CLUSTERS_ENV = "LENS_CLUSTERS"
#: a name travels in URLs and on command lines: no spaces, no slashes
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,252}$")
ENTRY_KEYS = ("name", "display_name", "labels", "context", "kubeconfig", "snapshot", "demo")
CONTEXTS_ARGV = ("kubectl", "config", "get-contexts", "-o", "name")


def default_path(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/lens/clusters.yaml`` (``~/.config/lens/clusters.yaml``), where Linux tools keep settings."""
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "lens" / "clusters.yaml"


@dataclass(frozen=True)
class Cluster:
    """One named cluster and where its objects come from."""

    name: str
    display_name: str
    labels: dict[str, str] = field(default_factory=dict)
    context: str | None = None
    kubeconfig: str | None = None
    snapshot: Path | None = None
    demo: bool = False

    @property
    def kind(self) -> str:
        return "demo" if self.demo else "snapshot" if self.snapshot is not None else "live"

    @property
    def live(self) -> bool:
        return self.kind == "live"

    def source(self, timeout: float = DEFAULT_TIMEOUT) -> ClusterSource:
        return ClusterSource(snapshot=self.snapshot, demo=self.demo, context=self.context,
                             kubeconfig=self.kubeconfig, timeout=timeout)

    def to_dict(self) -> dict[str, Any]:
        where: dict[str, Any] = {"demo": {}, "snapshot": {"snapshot": str(self.snapshot)},
                                 "live": {"context": self.context, "kubeconfig": self.kubeconfig}}[self.kind]
        return {"name": self.name, "display_name": self.display_name, "labels": dict(self.labels),
                "kind": self.kind, **where}


@dataclass(frozen=True)
class Clusters:
    """The clusters a command or the server may read, in the order they were given."""

    clusters: tuple[Cluster, ...]
    origin: str  # the clusters file, or "kubeconfig"

    def names(self) -> list[str]:
        return [c.name for c in self.clusters]

    def get(self, name: str) -> Cluster:
        for cluster in self.clusters:
            if cluster.name == name:
                return cluster
        known = self.names()
        raise ClusterUnknown(f"no cluster named {name!r} in {self.origin}; known: {', '.join(known) or '(none)'}",
                             details={"cluster": name, "known": known, "origin": self.origin})

    def select(self, names: Sequence[str]) -> list[Cluster]:
        return [self.get(name) for name in names] if names else list(self.clusters)


# -- the clusters file ----------------------------------------------------------------------


def load_file(path: Path) -> Clusters:
    """The clusters a file names, every entry checked; the first problem is raised with its field path."""
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise _invalid(path, "", data, "must be a mapping with a 'clusters' list")
    unknown = sorted(set(data) - {"clusters"}, key=str)
    if unknown:
        raise _invalid(path, str(unknown[0]), data[unknown[0]], "is an unknown key (known keys: clusters)")
    entries = data.get("clusters")
    if not isinstance(entries, list) or not entries:
        raise _invalid(path, "clusters", entries, "must be a non-empty list of clusters")
    seen: dict[str, int] = {}
    clusters = []
    for index, entry in enumerate(entries):
        cluster = _entry(path, f"clusters[{index}]", entry)
        if cluster.name in seen:
            raise _invalid(path, f"clusters[{index}].name", cluster.name,
                           f"is already the name of clusters[{seen[cluster.name]}]; names must be unique")
        seen[cluster.name] = index
        clusters.append(cluster)
    return Clusters(tuple(clusters), str(path))


def _entry(path: Path, where: str, entry: Any) -> Cluster:
    if not isinstance(entry, dict):
        raise _invalid(path, where, entry, "must be a mapping (name, and one of context, snapshot or demo)")
    for key in entry:
        if key not in ENTRY_KEYS:
            raise _invalid(path, f"{where}.{key}", entry[key], f"is an unknown key (known keys: {', '.join(ENTRY_KEYS)})")
    name = entry.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise _invalid(path, f"{where}.name", name, "must be a name of letters, digits and . _ : @ - (no spaces or slashes)")
    display = entry.get("display_name", name)
    if not isinstance(display, str) or not display.strip():
        raise _invalid(path, f"{where}.display_name", display, "must be a non-empty string")
    labels = entry.get("labels", {})
    if not isinstance(labels, dict):
        raise _invalid(path, f"{where}.labels", labels, "must be a mapping of label names to strings")
    for key, value in labels.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise _invalid(path, f"{where}.labels.{key}", value, "must be a string (quote numbers and booleans)")
    for key in ("context", "kubeconfig", "snapshot"):
        if key in entry and (not isinstance(entry[key], str) or not entry[key].strip()):
            raise _invalid(path, f"{where}.{key}", entry[key], "must be a non-empty string")
    demo = entry.get("demo", False)
    if not isinstance(demo, bool):
        raise _invalid(path, f"{where}.demo", demo, "must be true or false")
    kinds = [key for key, given in (("context", "context" in entry), ("snapshot", "snapshot" in entry), ("demo", demo)) if given]
    if len(kinds) != 1:
        problem = "names none of" if not kinds else f"names {' and '.join(kinds)}; give exactly one of"
        raise _invalid(path, where, {k: entry.get(k) for k in kinds}, f"{problem} context, snapshot or demo")
    if "kubeconfig" in entry and kinds != ["context"]:
        raise _invalid(path, f"{where}.kubeconfig", entry["kubeconfig"], "goes with context (a live cluster) only")
    snapshot = None
    if "snapshot" in entry:
        snapshot = _relative(path, entry["snapshot"])
        if not snapshot.exists():
            raise _invalid(path, f"{where}.snapshot", entry["snapshot"], f"does not exist ({snapshot})")
    kubeconfig = str(_relative(path, entry["kubeconfig"])) if "kubeconfig" in entry else None
    return Cluster(name=name, display_name=display, labels=dict(labels), context=entry.get("context"),
                   kubeconfig=kubeconfig, snapshot=snapshot, demo=demo)


def _relative(path: Path, value: str) -> Path:
    """A path in the file: ``~`` expanded, relative ones taken from the file's directory."""
    given = Path(os.path.expanduser(value))
    return given if given.is_absolute() else path.parent / given


def _read_yaml(path: Path) -> Any:
    import yaml

    from llm_d_lens import yamlread

    def refused(problem: str) -> ClustersFileInvalid:
        return ClustersFileInvalid(f"{path}: {problem}", details={"file": str(path), "path": "", "problem": problem})

    try:
        with path.open("rb") as handle:
            raw = handle.read(yamlread.MAX_BYTES + 1)  # never more than the bound, whatever the file's size
    except OSError as exc:
        raise refused(f"cannot be read: {exc.strerror}") from None
    if len(raw) > yamlread.MAX_BYTES:
        raise refused(f"is larger than {yamlread.MAX_BYTES} bytes; a clusters file names a few clusters") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise refused(f"is not UTF-8 text (byte {exc.start} is {raw[exc.start:exc.start + 1]!r}); "
                      "save it as UTF-8") from None
    try:
        return yamlread.load(text)
    except yamlread.DuplicateKey as exc:
        raise _invalid(path, exc.path, None, "appears twice in one mapping; the second would silently replace the first") from None
    except yamlread.YamlRefused as exc:
        raise refused(f"refused before reading: {exc}") from None
    except yaml.YAMLError as exc:
        raise refused(f"is not valid YAML: {clip(str(exc), 1000)}") from None


def _invalid(path: Path, where: str, value: Any, problem: str) -> ClustersFileInvalid:
    at = f"{where}: " if where else ""
    shown = f" (value: {show_value(value)})" if value is not None and where else ""
    return ClustersFileInvalid(f"{path}: {at}{problem}{shown}",
                               details={"file": str(path), "path": where, "value": value, "problem": problem})


# -- without a file: the kubeconfig's contexts ------------------------------------------------


def from_kubeconfig(runner: Runner) -> Clusters:
    """Every context of the runner's kubeconfig (``kubectl config get-contexts -o name``), one cluster each."""
    result = runner.run(list(CONTEXTS_ARGV))
    names = [line.strip() for line in result.stdout.splitlines() if line.strip()]
    kubeconfig = getattr(runner, "kubeconfig", None)
    clusters = tuple(Cluster(name=name, display_name=name, context=name, kubeconfig=kubeconfig) for name in names)
    return Clusters(clusters, "kubeconfig")


def load(path: Path | None = None, *, env: Mapping[str, str] | None = None, runner: Runner | None = None,
         kubeconfig: str | None = None) -> Clusters:
    """The user's clusters: ``path``, else ``LENS_CLUSTERS``, else the default file if it exists, else the kubeconfig's contexts."""
    from llm_d_lens.cluster import source as source_module

    env = os.environ if env is None else env
    chosen = path if path is not None else (Path(env[CLUSTERS_ENV]) if env.get(CLUSTERS_ENV) else None)
    if chosen is not None:
        return load_file(Path(os.path.expanduser(str(chosen))))
    fallback = default_path(env)
    if fallback.is_file():
        return load_file(fallback)
    return from_kubeconfig(runner or source_module.make_runner(ClusterSource(kubeconfig=kubeconfig)))
