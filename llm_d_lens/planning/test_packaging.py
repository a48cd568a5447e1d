"""The wheel ships the model catalogue (read at run time) and none of the test fixtures."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_carries_the_catalogue_but_not_testdata(tmp_path):
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    (wheel,) = tmp_path.glob("llm_d_lens-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "llm_d_lens/planning/catalogue.json" in names and "llm_d_lens/planning/aic.py" in names
    assert not [n for n in names if "/testdata/" in n]
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "Provides-Extra: planning" in text and 'aiconfigurator==0.12.0; extra == "planning"' in text
