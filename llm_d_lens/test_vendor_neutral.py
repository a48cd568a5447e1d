"""No domain code names a vendor: every vendor fact lives in the hardware profiles and providers.

Comments and docstrings count too: a vendor named in prose is usually a vendor assumed in code.
Checked: every non-test module of the package (each domain, the shared packages, and the top-level
runner, CLI, terminal and errors modules), a domain added later included. Left out by design:
``hardware/`` (the profiles, the providers and the contract that describes them are the vendor
surface) and ``testing/`` (test support, read like the tests, which may name vendors).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent
#: top-level folders of the package whose modules may name vendors, and why
EXEMPT = {
    "hardware": "the vendor surface: profiles, providers and the contract that describes them",
    "testing": "test support, held to the tests' rules",
}
VENDOR_WORDS = re.compile(
    r"(?<![a-z])(nvidia|amd|intel|gaudi|habana|habanalabs|google|gke|tpu|xpu|xpum|dcgm|rocm|cuda|instinct)(?![a-z])", re.I
)


def checked_modules() -> list[Path]:
    """Every non-test Python module of the package outside the exempt folders."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in EXEMPT or path.name.startswith("test_") or path.name == "conftest.py":
            continue
        found.append(path)
    return found


def test_domain_code_names_no_vendor():
    offenders = []
    for path in checked_modules():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if VENDOR_WORDS.search(line):
                offenders.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert offenders == []


def test_every_domain_and_top_level_module_is_checked():
    checked = {path.relative_to(PACKAGE).as_posix() for path in checked_modules()}
    for module in ("runner/process.py", "cli/app.py", "terminal/output.py", "errors.py"):
        assert module in checked
    domains = ["deploy", "evaluate", "monitoring", "api"]
    if (PACKAGE / "cluster").is_dir():  # merged separately; covered as soon as it is there
        domains.append("cluster")
    for domain in domains:
        assert any(name.startswith(f"{domain}/") for name in checked), domain
    # nested packages are walked too, tests are not
    assert "monitoring/accelerator/service.py" in checked and "monitoring/gpu_driver/plan.py" in checked
    assert not any(Path(name).name.startswith("test_") or Path(name).name == "conftest.py" for name in checked)
    assert not any(name.startswith(("hardware/", "testing/")) for name in checked)


@pytest.mark.parametrize(
    "line, vendor",
    [
        ('limits = {"nvidia.com/gpu": 1}', True),
        ("# the DCGM_FI_DEV_POWER_USAGE gauge", True),
        ('device_class = "gpu.intel.com"', True),
        ("overlay such as gke", True),
        ("Habana Gaudi2", True),
        ("rendered output", False),  # "tpu" inside a word
        ("Amdahl's law", False),
        ("a gpu and a cpu", False),
    ],
)
def test_vendor_words_are_matched_as_words(line, vendor):
    assert (VENDOR_WORDS.search(line) is not None) is vendor
