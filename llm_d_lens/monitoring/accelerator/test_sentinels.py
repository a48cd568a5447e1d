"""Sentinels: an exporter's "no reading" values are never a reading, on every path Lens reads.

Pages: testdata/dcgm-default-l40s.prom (the GPU Operator's default DCGM field list, with the DCGM
exporter README's sample value ``DCGM_FI_DEV_MEMORY_TEMP ... 9223372036854775794`` and a double blank);
the README's own sample lines (NVIDIA/dcgm-exporter README.md, "Quickstart"); the shared AMD sample with
values replaced by the exporter's not-applicable values (device-metrics-exporter pkg/exporter/utils).
The blank values are DCGM's (dcgm_structs.h: DCGM_INT32_BLANK 0x7ffffff0, DCGM_INT64_BLANK
0x7ffffffffffffff0, DCGM_FP64_BLANK 2^47, each followed by NOT_FOUND, NOT_SUPPORTED, NOT_PERMISSIONED).
"""

from __future__ import annotations

import json

import pytest

from llm_d_lens.hardware.errors import ProfileInvalid
from llm_d_lens.hardware.loader import validate_payload
from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.monitoring.accelerator.plan import plan_for
from llm_d_lens.monitoring.accelerator.queries import dashboard_queries, queries
from llm_d_lens.testing.telemetry_pages import by_name, fixture_text, refresh, sample_text, snapshot

L40S = "dcgm-default-l40s.prom"

#: the dcgm-exporter README's sample, label spacing as printed there, plus a memory reading so the device is listed
README_PAGE = """\
# HELP DCGM_FI_DEV_MEM_CLOCK Memory clock frequency (in MHz).
# TYPE DCGM_FI_DEV_MEM_CLOCK gauge
# HELP DCGM_FI_DEV_MEMORY_TEMP Memory temperature (in C).
# TYPE DCGM_FI_DEV_MEMORY_TEMP gauge
DCGM_FI_DEV_MEM_CLOCK{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 405
DCGM_FI_DEV_MEMORY_TEMP{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 9223372036854775794
DCGM_FI_DEV_FB_USED{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 1024
"""


def _line(text: str, metric: str, gpu: str, value: str) -> str:
    """``text`` with the sample of ``metric`` on GPU ``gpu`` set to ``value``."""
    out = []
    for line in text.splitlines():
        if line.startswith(metric + "{") and f'gpu="{gpu}"' in line:
            line = line.rsplit(" ", 1)[0] + " " + value
        out.append(line)
    return "\n".join(out) + "\n"


def test_the_readme_sample_memory_temperature_is_null_with_the_reason_not_9e18():
    device = by_name(snapshot(README_PAGE, ["nvidia"]))["-/0"]
    assert device["memory_temperature_celsius"] is None
    assert device["memory_used_bytes"] == 1024 * 2**20
    reason = device["unavailable"]["memory_temperature_celsius"]
    assert reason.startswith("DCGM_FI_DEV_MEMORY_TEMP reported 9.22337e+18, a sentinel: DCGM int64 blank")
    assert "9.2e18" not in json.dumps(device) and 9223372036854775794 not in device.values()


@pytest.fixture(params=["prometheus", "snapshot"])
def l40s(request) -> dict[str, dict]:
    if request.param == "prometheus":
        return by_name(refresh(request.getfixturevalue("prometheus").url, ["nvidia"], node="l40s-node-01"))
    return by_name(snapshot(fixture_text(L40S), ["nvidia"]))


def test_blanks_on_a_default_install_page_are_null_and_real_values_next_to_them_stay(l40s):
    idle, busy = l40s["l40s-node-01/0"], l40s["l40s-node-01/1"]
    for device in (idle, busy):
        assert device["memory_temperature_celsius"] is None
        assert "DCGM_INT64_BLANK" in device["unavailable"]["memory_temperature_celsius"]
    assert (idle["temperature_celsius"], busy["temperature_celsius"]) == (31, 67)
    # GPU 1's PCIe TX rate 2147483632 B/s equals the int32 blank, but PCIe bytes are a double field: a reading
    assert busy["pcie_throughput_bytes_per_second"] == 2147483632 + 1873920011
    assert "pcie_throughput_bytes_per_second" not in busy["unavailable"]


def test_a_double_blank_leaves_the_fallback_null_with_its_reason():
    # without DCGM_FI_DEV_GPU_UTIL, utilisation falls back to DCGM_FI_PROF_GR_ENGINE_ACTIVE: GPU 1's is DCGM_FP64_BLANK + 2
    text = "\n".join(l for l in fixture_text(L40S).splitlines() if not l.startswith("DCGM_FI_DEV_GPU_UTIL{")) + "\n"
    devices = by_name(snapshot(text, ["nvidia"]))
    assert devices["l40s-node-01/0"]["utilization_ratio"] == 0.0
    busy = devices["l40s-node-01/1"]
    assert busy["utilization_ratio"] is None
    assert "DCGM_FP64_BLANK" in busy["unavailable"]["utilization_ratio"]


def test_an_int32_blank_in_an_int64_field_is_null_and_a_wide_counter_only_on_the_exact_values():
    text = _line(fixture_text(L40S), "DCGM_FI_DEV_GPU_TEMP", "0", "2147483634")  # DCGM_INT32_NOT_SUPPORTED
    text = _line(text, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "0", "2147483633")  # DCGM_INT32_NOT_FOUND
    text = _line(text, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "1", "2147483700")  # a real count past 0x7ffffff0
    devices = by_name(snapshot(text, ["nvidia"]))
    idle, busy = devices["l40s-node-01/0"], devices["l40s-node-01/1"]
    assert idle["temperature_celsius"] is None and "DCGM int32 blank" in idle["unavailable"]["temperature_celsius"]
    assert idle["energy_joules"] is None and "DCGM int32 blank in a wide counter" in idle["unavailable"]["energy_joules"]
    assert busy["energy_joules"] == pytest.approx(2147483.7)


def test_amd_not_applicable_values_are_null_and_a_plausible_equal_reading_is_kept():
    text = sample_text("amd-device-metrics-exporter.prom")
    lines = []
    for line in text.splitlines():
        if line.startswith("gpu_junction_temperature{") and 'gpu_id="1"' in line:
            line = line.rsplit(" ", 1)[0] + " 65535"
        if line.startswith("gpu_used_vram{") and 'gpu_id="1"' in line:
            line = line.rsplit(" ", 1)[0] + " 65535"  # 64 GiB used is a reading, not the 16-bit NA
        lines.append(line)
    device = by_name(snapshot("\n".join(lines) + "\n", ["amd"]))["amd-node-01/PCB049874-0112"]
    assert device["temperature_celsius"] is None
    assert "IsValueApplicable" in device["unavailable"]["temperature_celsius"]
    assert device["memory_used_bytes"] == 65535 * 2**20


def test_dashboard_and_refresh_queries_drop_the_sentinels_and_a_query_names_them():
    plan = plan_for(get_registry().get("nvidia"))
    dashboard = dashboard_queries(plan)["memory_temperature"]
    assert "< 9.223372036854776e+18" in dashboard and "< 2147483632.0" in dashboard
    assert "!= 2147483633.0" in dashboard_queries(plan)["energy"]
    assert "< 140737488355328.0" in dashboard_queries(plan)["power"]
    named = queries(plan)["sentinels"]
    assert 'label_replace(' in named and '"DCGM_FI_DEV_MEMORY_TEMP"' in named and ">= 9.223372036854776e+18" in named


def test_a_sentinel_row_with_neither_a_bound_nor_values_is_a_profile_error():
    data = get_registry().get("nvidia").to_data(exclude_none=True)
    data["telemetry"]["sentinels"] = [{"metrics": ["DCGM_FI_DEV_GPU_TEMP"], "reason": "nothing matches"}]
    with pytest.raises(ProfileInvalid) as caught:
        validate_payload(data, "nvidia.json")
    assert "telemetry.sentinels" in str(caught.value) and "at_least or values" in str(caught.value)
