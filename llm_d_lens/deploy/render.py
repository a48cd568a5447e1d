"""Rendering an overlay with the real kustomize, through the CommandRunner.

``kubectl kustomize`` (kustomize built into kubectl) is used when kubectl is installed, a
standalone ``kustomize build`` otherwise. kustomize only reads the overlay directory, so the
user's checkout is never written to; anything Lens adds is added to the parsed objects later.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from llm_d_lens.deploy.errors import KustomizeNotFound, RenderFailed
from llm_d_lens.deploy.source import LlmdSource
from llm_d_lens.runner import CommandFailed, Runner

#: Seconds one render may take; kustomize on an llm-d overlay takes well under one.
RENDER_TIMEOUT = 60.0

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
# kubectl wraps kustomize's error as: E1130 ... run.go:72] "command failed" err=<\n\t...\n >
_KLOG_ERR = re.compile(r'err=<\n(?P<body>.*?)\n\s*>\s*$', re.DOTALL)


def kustomize_command(runner: Runner) -> list[str]:
    """The render command this machine has: kubectl's built-in kustomize, else kustomize itself."""
    if runner.which("kubectl"):
        return ["kubectl", "kustomize"]
    if runner.which("kustomize"):
        return ["kustomize", "build"]
    raise KustomizeNotFound(
        "cannot render llm-d overlays: neither `kubectl` (which has kustomize built in) nor `kustomize` is on PATH; "
        "install one of them"
    )


def build(runner: Runner, source: LlmdSource, directory: Path | str, *, timeout: float = RENDER_TIMEOUT) -> str:
    """kustomize's YAML for ``directory``; a failure quotes kustomize, with paths relative to the source."""
    argv = [*kustomize_command(runner), str(directory)]
    try:
        return runner.run(argv, timeout=timeout).stdout
    except CommandFailed as exc:
        reason = _kustomize_reason(exc.stderr, source)
        shown = source.display(directory)
        raise RenderFailed(
            f"kustomize could not render {shown} ({source.describe()}): {reason}",
            details={"overlay": shown, "source": source.to_dict(), "kustomize": reason},
        ) from None


def _kustomize_reason(stderr: str, source: LlmdSource) -> str:
    text = stderr.strip()
    wrapped = _KLOG_ERR.search(text)
    if wrapped:
        text = "\n".join(line.strip() for line in wrapped.group("body").splitlines() if line.strip())
    if text.startswith("Error: "):
        text = text[len("Error: "):]
    return text.replace(str(source.root) + "/", "").replace(str(source.root), ".") or "kustomize printed no error"


def parse_manifests(text: str, where: str) -> list[dict[str, Any]]:
    """The objects of a multi-document YAML stream; anything but mappings is an error naming ``where``."""
    try:
        documents = list(yaml.load_all(text, Loader=_LOADER))
    except yaml.YAMLError as exc:
        raise RenderFailed(f"kustomize output for {where} is not valid YAML: {exc}") from None
    objects = []
    for i, document in enumerate(documents):
        if document is None:
            continue
        if not isinstance(document, dict) or "kind" not in document:
            raise RenderFailed(f"kustomize output for {where}: document {i + 1} is not a Kubernetes object")
        objects.append(document)
    return objects


def dump_manifests(objects: list[dict[str, Any]]) -> str:
    """Objects as one YAML stream, in kustomize's style (sorted keys, ``---`` between documents)."""
    return "---\n".join(yaml.dump(o, Dumper=_DUMPER, default_flow_style=False, sort_keys=True, width=4096) for o in objects)
