"""A guide as a whole: which directories are guides, and what each holds besides model-server overlays.

A guide is more than its overlays: a router (Helm values under ``router/``), monitoring, companion
manifests (PVCs, storage classes under ``manifests/``) and helpers (a KV store such as a Mooncake
master or client, under the checkout's ``helpers/``). The rules, each from llm-d's layout:

* a guide is a directory under ``guides/`` holding ``modelserver/``, or a README and no guide
  below it; ``guides/recipes`` is the shared recipe library, never a guide, and nothing inside a
  guide (``manifests/``, ``router/``) is another guide;
* a Kustomization under an overlay root that pulls in the checkout's ``helpers/`` is a helper,
  never an alternative overlay;
* the router values file an overlay pairs with is the guide's ``router/<name>.values.yaml`` whose
  extra words (``-trtllm``, ``-cpu``) all name the overlay, else the one without extra words.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from llm_d_lens.deploy.discovery import MAX_GUIDE_DEPTH, RECIPES, Overlay
from llm_d_lens.deploy.kustomization import KUSTOMIZATION_FILES, KustomizationReader
from llm_d_lens.deploy.source import LlmdSource
from llm_d_lens.deploy.targets import documented_patterns

HELPERS = "helpers"
ROUTER_BASE = "guides/recipes/router/base.values.yaml"
GATEWAYS = "guides/recipes/gateway"
_WORD = re.compile(r"[a-z0-9]+")


class GuideContents(msgspec.Struct):
    """What one guide holds besides its model-server overlays, as paths relative to the source."""

    guide: str
    router_values: list[str] = msgspec.field(default_factory=list)
    monitoring: list[str] = msgspec.field(default_factory=list)
    manifests: list[str] = msgspec.field(default_factory=list)
    helpers: list[str] = msgspec.field(default_factory=list)  # helper Kustomizations: in the guide, or helpers/ it applies
    other: list[str] = msgspec.field(default_factory=list)  # further Kustomizations of the guide, outside modelserver/
    shared: list[str] = msgspec.field(default_factory=list)  # bases and components under modelserver/ of no one hardware

    def to_dict(self) -> dict[str, Any]:
        return {"guide": self.guide, "router_values": self.router_values, "monitoring": self.monitoring,
                "manifests": self.manifests, "helpers": self.helpers, "other": self.other, "shared": self.shared}


def guide_names(source: LlmdSource) -> list[str]:
    """Every guide of the source (``optimized-baseline``, ``multimodal-serving/aggregation``).

    A guide is the shallowest directory under ``guides/`` that holds ``modelserver/``, or a README
    while none of its sub-directories holds both (``multimodal-serving`` only groups two guides;
    ``wide-ep-lws/manifests`` is a folder of its guide).
    """
    top = Path(source.root) / "guides"
    found: list[str] = []

    def subdirs(directory: Path) -> list[Path]:
        try:
            return sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))
        except OSError:
            return []

    def visit(directory: Path, parts: tuple[str, ...]) -> None:
        for child in subdirs(directory):
            if not parts and child.name == RECIPES:
                continue
            name = (*parts, child.name)
            groups = any((g / "modelserver").is_dir() and _has_readme(g) for g in subdirs(child))
            if (child / "modelserver").is_dir() or (_has_readme(child) and not groups):
                found.append("/".join(name))
            elif len(name) < MAX_GUIDE_DEPTH:
                visit(child, name)

    if top.is_dir():
        visit(top, ())
    return sorted(found)


def _has_readme(directory: Path) -> bool:
    return any(p.is_file() and p.name.lower().startswith("readme") for p in directory.iterdir())


def is_helper(reader: KustomizationReader, overlay: Overlay) -> str | None:
    """The ``helpers/...`` directory the overlay pulls in, when it does: then it is a helper, not an overlay."""
    doc = reader.load(Path(overlay.directory))
    helpers = os.path.join(os.path.realpath(reader.source.root), HELPERS) + os.sep
    for key in ("resources", "bases"):
        for entry in doc.data.get(key) or []:
            if isinstance(entry, str) and "\n" not in entry:
                target = os.path.realpath(os.path.normpath(os.path.join(overlay.directory, entry)))
                if target.startswith(helpers):
                    return reader.source.display(target)
    return None


def contents(source: LlmdSource, guide: str, helper_overlays: Iterable[Overlay] = ()) -> GuideContents:
    """The guide's router values, monitoring, manifests, helpers and other Kustomizations."""
    root = Path(source.root)
    directory = root / "guides" / guide
    found = GuideContents(guide)
    router = directory / "router"
    if router.is_dir():
        found.router_values = sorted(source.display(p) for p in router.glob("*.values.yaml"))
    manifests = directory / "manifests"
    if manifests.is_dir():
        found.manifests = sorted(source.display(p) for p in manifests.rglob("*") if p.suffix in (".yaml", ".yml"))
    found.helpers = sorted({o.path for o in helper_overlays} | set(_documented_helpers(source, guide)))
    for sub, dirs, files in os.walk(str(directory)):
        relative = [] if sub == str(directory) else os.path.relpath(sub, directory).split(os.sep)
        if relative[:1] == ["modelserver"] or any(d.startswith(".") for d in relative):
            dirs[:] = []
            continue
        if any(f in KUSTOMIZATION_FILES for f in files):
            (found.monitoring if "monitoring" in relative else found.other).append(source.display(sub))
    found.monitoring.sort()
    found.other.sort()
    return found


def _documented_helpers(source: LlmdSource, guide: str) -> list[str]:
    """The ``helpers/<name>/...`` Kustomizations the guide's Markdown applies."""
    root = Path(source.root)
    found = []
    for pattern in documented_patterns(source, guide):
        literal = pattern.pattern.replace("\\", "").removesuffix("/?")
        if literal.startswith(HELPERS + "/") and not re.search(r"[\[\(\*\+\?]", literal):
            if any((root / literal / name).is_file() for name in KUSTOMIZATION_FILES):
                found.append(literal)
    return found


def router_values_for(overlay: Overlay, guide: GuideContents, source: LlmdSource) -> list[str]:
    """The values files ``helm install`` of the guide's router takes for this overlay: the shared base, then the guide's."""
    words = set(_WORD.findall(overlay.path.lower())) | {overlay.model_server or ""}
    best: tuple[int, str] | None = None
    guide_words = set(_WORD.findall(guide.guide.split("/")[-1]))
    for values in guide.router_values:
        stem = Path(values).name.removesuffix(".values.yaml")
        extra = set(_WORD.findall(stem)) - guide_words
        if extra <= words and (best is None or len(extra) > best[0]):
            best = (len(extra), values)
    chosen = [ROUTER_BASE] if (Path(source.root) / ROUTER_BASE).is_file() else []
    return chosen + ([best[1]] if best else [])


def companions_for(overlay: Overlay, guide: GuideContents) -> list[str]:
    """What the overlay needs deployed beside it: the guide's manifests and monitoring, and its helpers.

    A helper inside the guide serves the overlays below its parent directory
    (``mooncake-store/fs/mooncake-client`` serves ``mooncake-store/fs/base``); a helper under
    ``helpers/`` serves overlays whose path shares its first word (``mooncake``).
    """
    needed = [*guide.manifests, *guide.monitoring]
    for helper in guide.helpers:
        if helper.startswith(HELPERS + "/"):
            word = _WORD.findall(helper.split("/")[1])[:1]
            if word and word[0] in _WORD.findall(overlay.path.lower()):
                needed.append(helper)
        elif (overlay.path + "/").startswith(helper.rsplit("/", 1)[0] + "/") and overlay.path != helper:
            needed.append(helper)
    return needed


_VALUES_FILE = re.compile(r"(?:.*[-_.])?values(?:[-_.].*)?\.ya?ml")


def helm_values_files(source: LlmdSource, guide: str | None = None) -> list[str]:
    """The Helm values files of the guides (or of one), outside ``router/``: the layout before the overlays."""
    top = Path(source.root) / "guides"
    start = top / guide if guide else top
    found = []
    for directory, dirs, files in os.walk(start):
        relative = Path(directory).relative_to(top).parts
        if relative[:1] == (RECIPES,) or "router" in relative:
            dirs[:] = []
            continue
        found += [source.display(os.path.join(directory, f)) for f in files if _VALUES_FILE.fullmatch(f)]
    return sorted(found)
