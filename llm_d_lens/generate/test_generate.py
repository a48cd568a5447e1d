"""Every generated file is what its sources give, and the check names every stale one at once."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llm_d_lens.generate import GENERATED, REPO, stale, write

needs_checkout = pytest.mark.skipif(not (REPO / "docs" / "cli.md").exists(),
                                    reason=f"no checkout at {REPO} (an installed wheel carries no docs or manifests)")


@needs_checkout
def test_every_generated_file_is_current():
    assert stale() == [], "run: python -m llm_d_lens.generate"


@needs_checkout
def test_check_names_every_stale_file_and_writing_makes_them_current(tmp_path: Path):
    for entry in GENERATED:
        (tmp_path / entry.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / entry.path, tmp_path / entry.path)
    edited = ["docs/cli.md", "llm_d_lens/hardware/schema.json"]
    for path in edited:
        (tmp_path / path).write_text((tmp_path / path).read_text() + "\nedited by hand\n")
    (tmp_path / "manifests/monitoring/prometheusrule.yaml").unlink()
    found = stale(tmp_path)
    assert [line.split(":")[0] for line in found] == ["llm_d_lens/hardware/schema.json", "docs/cli.md",
                                                        "manifests/monitoring/prometheusrule.yaml"]
    assert sorted(write(tmp_path)) == sorted([*edited, "manifests/monitoring/prometheusrule.yaml"])
    assert stale(tmp_path) == []
    assert (tmp_path / "docs/cli.md").read_text() == (REPO / "docs/cli.md").read_text()


@needs_checkout
def test_the_command_exits_0_when_current_and_2_on_a_wrong_argument():
    ok = subprocess.run([sys.executable, "-m", "llm_d_lens.generate", "--check"], capture_output=True, text=True, timeout=300)
    assert (ok.returncode, ok.stderr) == (0, "")
    wrong = subprocess.run([sys.executable, "-m", "llm_d_lens.generate", "--chek"], capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and "usage" in wrong.stderr
