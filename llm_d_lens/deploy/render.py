"""Rendering an overlay with the real kustomize, through the CommandRunner.

``kubectl kustomize`` (kustomize built into kubectl) is used when kubectl is installed, a
standalone ``kustomize build`` otherwise. kustomize only reads the overlay directory, so the
user's checkout is never written to; anything Lens adds is added to the parsed objects later.
"""

from __future__ import annotations

import re
import threading
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


class Build:
    """kustomize rendering one overlay on a thread of its own, so Lens reads the rest of the guide meanwhile.

    kustomize is another process: while it runs, the work that does not need its output (the
    guide's router values and companions, the modules that fit the render) runs beside it instead
    of after it. :meth:`output` waits for it and raises what :func:`build` would have raised.
    Leaving the ``with`` block waits too, so a temporary source (``--revision``) is never removed
    under a running kustomize.
    """

    def __init__(self, runner: Runner, source: LlmdSource, directory: Path | str, *, timeout: float = RENDER_TIMEOUT):
        self._text: str | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(runner, source, directory, timeout),
                                        name="kustomize", daemon=True)

    def _run(self, runner: Runner, source: LlmdSource, directory: Path | str, timeout: float) -> None:
        try:
            self._text = build(runner, source, directory, timeout=timeout)
        except BaseException as exc:  # raised again on the caller's thread by output()
            self._error = exc

    def __enter__(self) -> Build:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._thread.join()

    def output(self) -> str:
        """kustomize's YAML, once it has finished; its failure as :func:`build` raises it."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._text is not None
        return self._text


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
