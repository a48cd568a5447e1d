"""The wheel carries the code, the schema and the profiles, and none of the tests."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_ships_profiles_and_schema_but_no_tests(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    (wheel,) = tmp_path.glob("llm_d_lens-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "llm_d_lens/hardware/schema.json" in names
    assert {f"llm_d_lens/hardware/profiles/{p}.json" for p in ("nvidia", "amd", "intel-xpu", "intel-gaudi", "google-tpu", "cpu")} <= set(names)
    assert {f"llm_d_lens/hardware/profiles/network/{p}.json" for p in ("dranet", "gke-rdma", "rdma-shared-device")} <= set(names)
    assert "llm_d_lens/hardware/registry.py" in names
    assert "llm_d_lens/evaluate/benchmark_overlays.json" in names  # read by lens evaluate config
    # the console works from the wheel alone: templates, its own assets, and the demo telemetry
    assert {"llm_d_lens/console/templates/overview.html", "llm_d_lens/console/static/console.css",
            "llm_d_lens/console/static/console.js", "llm_d_lens/console/static/icons.svg",
            "llm_d_lens/monitoring/demo/telemetry.prom.gz"} <= set(names)
    shipped_tests = [n for n in names if Path(n).name.startswith("test_") or Path(n).name == "conftest.py"]
    assert shipped_tests == []
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[llm_d_lens.hardware.profiles]" in text and "intel-gaudi = llm_d_lens.hardware.providers.intel_gaudi:load_profiles" in text
    # `make demo` on a fresh clone printed three setuptools deprecation warnings for the license table
    assert "deprecated" not in result.stderr.lower(), result.stderr[-2000:]
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    assert "License-Expression: Apache-2.0" in zipfile.ZipFile(wheel).read(metadata).decode().splitlines()
