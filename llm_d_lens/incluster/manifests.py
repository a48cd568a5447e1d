"""Lens's own manifests (top-level ``manifests/``): where they are and how an overlay renders.

Rendering is the real ``kubectl kustomize`` through the CommandRunner, the same command an operator
runs with ``kubectl apply -k``, so what the tests check is what a cluster would receive.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from llm_d_lens.runner import Runner

#: The overlays an operator chooses between; ``manifests/`` itself is the read-only default.
OVERLAYS = ("read-only", "installer", "prometheus", "node-discovery")
#: The ClusterRoles each overlay must bind, no more and no fewer.
ROLES = {"read-only": ("lens-read",), "prometheus": ("lens-read",),
         "installer": ("lens-read", "lens-installer", "lens-driver-charts"),
         "node-discovery": ("lens-read", "lens-node-discovery")}


def manifests_root() -> Path | None:
    """``manifests/`` of a source checkout; None in an installed package, which does not ship them."""
    root = Path(__file__).resolve().parents[2] / "manifests"
    return root if (root / "kustomization.yaml").is_file() else None


def render(directory: Path, runner: Runner) -> list[dict[str, Any]]:
    """The objects ``kubectl kustomize directory`` prints, in order."""
    out = runner.run(["kubectl", "kustomize", str(directory)]).stdout
    return [doc for doc in yaml.safe_load_all(out) if isinstance(doc, dict)]
