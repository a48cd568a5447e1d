"""The fast render path prints the same bytes as the plain one, on real llm-d overlays.

``deploy render`` reads and writes YAML with libyaml (PyYAML's ``CSafeLoader``/``CSafeDumper``)
where it is there, and the ``lens`` script imports only what a render needs. Both are for speed
alone: this renders upstream overlays of every shape (flat, base/gke, sub-overlays, the large
wide-ep ones) with the C classes and again with PyYAML's pure-Python ones, and compares the bytes;
and it runs the ``lens`` script itself against the pure-Python render of the same overlay.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from llm_d_lens.deploy import engines, kustomization, render as render_module
from llm_d_lens.deploy.conftest import kustomize_skip_reason
from llm_d_lens.deploy.service import RenderRequest, render
from llm_d_lens.deploy.test_conformance import ROOT
from llm_d_lens.runner import CommandRunner

pytestmark = [
    pytest.mark.skipif(ROOT is None, reason="no llm-d tree: ../shared/upstream/llm-d is absent and $LENS_LLM_D_ROOT is unset"),
    pytest.mark.skipif(kustomize_skip_reason() is not None, reason=kustomize_skip_reason() or ""),
]

#: (guide, hardware, model server, overlay): one of each layout the upstream tree has
OVERLAYS = [
    ("optimized-baseline", "amd", "sglang", "."),
    ("optimized-baseline", "google-tpu", "vllm", "v6"),
    ("optimized-baseline", "nvidia", "trtllm", "gke"),
    ("tiered-prefix-cache", "nvidia", "vllm", "lmcache-connector/fs/gke"),
    ("wide-ep-lws", "nvidia", "vllm", "coreweave"),
]


def _render_text(guide: str, hardware: str, server: str, overlay: str) -> str:
    request = RenderRequest(guide=guide, hardware=hardware, model_server=server, overlay=overlay)
    return render(request, root=ROOT, runner=CommandRunner()).manifests()


def _pure_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every YAML reader and writer of the render path on PyYAML's pure-Python classes."""
    for module in (render_module, engines, kustomization):
        monkeypatch.setattr(module, "_LOADER", yaml.SafeLoader)
    monkeypatch.setattr(render_module, "_DUMPER", yaml.SafeDumper)


@pytest.mark.skipif(not hasattr(yaml, "CSafeLoader"), reason="PyYAML was built without libyaml: only the pure-Python path exists")
@pytest.mark.parametrize(("guide", "hardware", "server", "overlay"), OVERLAYS)
def test_libyaml_renders_the_same_bytes_as_pure_python(monkeypatch: pytest.MonkeyPatch, guide: str, hardware: str,
                                                       server: str, overlay: str) -> None:
    assert render_module._LOADER is yaml.CSafeLoader and render_module._DUMPER is yaml.CSafeDumper
    fast = _render_text(guide, hardware, server, overlay)
    _pure_python(monkeypatch)
    plain = _render_text(guide, hardware, server, overlay)
    assert len([d for d in yaml.safe_load_all(fast) if d]) >= 2  # a real multi-object render, not two empty strings
    assert fast == plain


def test_the_lens_script_prints_the_plain_render(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    guide, hardware, server, overlay = OVERLAYS[-1]
    _pure_python(monkeypatch)
    plain = _render_text(guide, hardware, server, overlay)
    argv = [sys.executable, "-m", "llm_d_lens.cli", "deploy", "render", "--llm-d-root", str(ROOT), "--guide", guide,
            "--hardware", hardware, "--model-server", server, "--overlay", overlay]
    env = dict(os.environ, LENS_CACHE_DIR=str(tmp_path))
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=Path(__file__).parent, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == plain
