"""Smoke test of bench/deploy.py: a tiny run prints every line the full one does (no timing checks)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llm_d_lens.deploy.discovery import discover
from llm_d_lens.deploy.source import LlmdSource
from llm_d_lens.hardware.registry import get_registry

BENCH = Path(__file__).resolve().parent / "deploy.py"
REPO = BENCH.parents[1]


def llm_d_root() -> Path | None:
    for candidate in (os.environ.get("LENS_LLM_D_ROOT"), str(REPO / ".." / "shared" / "upstream" / "llm-d")):
        if candidate and (Path(candidate) / "guides").is_dir():
            return Path(candidate)
    return None


@pytest.mark.skipif(llm_d_root() is None, reason="no llm-d tree: ../shared/upstream/llm-d is absent and $LENS_LLM_D_ROOT is unset")
def test_a_tiny_run_prints_medians_and_ratios() -> None:
    root = llm_d_root()
    completed = subprocess.run([sys.executable, str(BENCH), "--llm-d-root", str(root), "--copies", "2", "--repeat", "1",
                                "--max-overlays", "2"], capture_output=True, text=True, timeout=120, check=True)
    lines = completed.stdout.splitlines()
    number = r"\d+\.\d+"
    assert lines[0] == f"deploy benchmark: llm-d tree {root.resolve()}"
    if shutil.which("kubectl"):
        assert lines[1] == "render: 2 overlays, 1 runs each, medians"
        renders = [line for line in lines if re.fullmatch(rf"render guides/\S+: lens {number} s, kubectl kustomize {number} s, ratio {number}", line)]
        assert len(renders) == 2
        assert any(re.fullmatch(rf"render total: lens {number} s, kubectl kustomize {number} s, ratio {number} \(goal <= 1\.2\)", line)
                   for line in lines)
        clis = [line for line in lines if line.startswith("cli ")]
        assert len(clis) == 2 and re.fullmatch(
            rf"cli render guides/\S+: lens {number} s, kubectl kustomize {number} s, ratio {number} \(goal <= 1\.3\)", clis[0])
        assert re.fullmatch(rf"cli guides: lens {number} s, find of its Kustomizations {number} s, ratio {number}", clis[1])
    else:
        assert lines[1].startswith("render: skipped")
    # every guide is copied twice, so the copy holds twice the overlays the tree itself has
    discovery = [line for line in lines if line.startswith("discovery over 2 copies (")]
    assert len(discovery) == 1
    once = len(discover(LlmdSource(root.resolve(), str(root)), get_registry()).overlays)
    assert re.fullmatch(rf"discovery over 2 copies \({2 * once} overlays, \d+ directories\): lens {number} s, os\.walk {number} s, "
                        rf"ratio {number} \(goal <= 2\.0\)", discovery[0])
    assert any(line.startswith("discovery + labels over 2 copies: lens ") for line in lines)
