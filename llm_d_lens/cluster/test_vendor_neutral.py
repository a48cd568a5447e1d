"""The inventory code never names a vendor: every vendor fact it uses comes from the profiles."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
VENDOR_WORDS = re.compile(
    r"nvidia|\bamd\b|intel|gaudi|habana|google|\btpu|xpu|rocm|cuda|\bmig\b|\bh100|\bh200|mi300|furiosa|"
    r"\b10de\b|\b1002\b|\b8086\b|\b1da3\b",
    re.IGNORECASE,
)
MODULES = sorted(p for p in HERE.glob("*.py") if not p.name.startswith("test_"))


@pytest.mark.parametrize("module", MODULES, ids=[p.name for p in MODULES])
def test_module_names_no_vendor(module: Path) -> None:
    hits = [f"{module.name}:{number}: {line.strip()}" for number, line in enumerate(module.read_text().splitlines(), 1)
            if VENDOR_WORDS.search(line)]
    assert hits == []


def test_the_check_would_catch_a_vendor_name() -> None:
    assert VENDOR_WORDS.search('if resource.startswith("nvidia.com/"):')
    assert VENDOR_WORDS.search("driver == 'gpu.intel.com'")
    assert len(MODULES) >= 10  # the modules of this package really are scanned
