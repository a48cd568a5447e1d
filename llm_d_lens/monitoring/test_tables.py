"""`lens telemetry devices` reads well at 80 and 120 columns; `-o wide` shows every column."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_d_lens.cli.app import main
from llm_d_lens.monitoring.cli import _devices_table
from llm_d_lens.testing.tables import assert_readable, assert_right_aligned, body_rows, header_cells, render

SNAPSHOT = Path(__file__).parent / "accelerator" / "testdata" / "amd-cpx-partitions.prom"
DEFAULT = ["NODE", "DEVICE", "UTIL %", "MEM USED GiB", "POWER W", "TEMP °C", "POD"]


@pytest.fixture(scope="module")
def report() -> dict:
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["telemetry", "devices", "--snapshot", str(SNAPSHOT), "--hardware", "amd", "-o", "json"]) == 0
    return json.loads(buffer.getvalue())


@pytest.mark.parametrize("width", [80, 120])
def test_devices_fit_with_units_in_headers_and_numbers_right_aligned(report: dict, width: int) -> None:
    text = render(_devices_table(report), width)
    assert_readable(text, width, DEFAULT, first="NODE")
    rows = body_rows(text, report["devices"][0]["node"])
    assert len(rows) == len(report["devices"])
    for device, row in zip(report["devices"], rows):
        cells = dict(zip(DEFAULT, row))
        assert cells["POWER W"].strip() == f"{device['power_watts']:.1f}"
        assert cells["UTIL %"].strip() == f"{device['utilization_ratio'] * 100:.0f}"
        for header in ("UTIL %", "MEM USED GiB", "POWER W", "TEMP °C"):
            assert_right_aligned(cells[header])
            assert not cells[header].strip().endswith(("%", "W", "GiB")), "the unit is in the header"


def test_wide_adds_hardware_total_memory_energy_tensor_and_clock(report: dict) -> None:
    text = render(_devices_table(report, wide=True), 200)
    assert header_cells(text, "HARDWARE") == ["HARDWARE", "NODE", "DEVICE", "UTIL %", "MEM USED GiB", "MEM TOTAL GiB",
                                              "POWER W", "ENERGY", "TEMP °C", "TENSOR %", "CLOCK MHz", "POD"]


def test_the_hardware_column_appears_when_a_report_mixes_hardware(report: dict) -> None:
    mixed = {**report, "devices": [*report["devices"], {**report["devices"][0], "hardware": "other-hw"}]}
    text = render(_devices_table(mixed), 120)
    assert header_cells(text, "HARDWARE")[0] == "HARDWARE" and "other-hw" in text
