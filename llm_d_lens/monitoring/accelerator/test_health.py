"""Device health as common quantities: memory errors, PCIe replays, critical events, memory temperature and
bandwidth, each mapped per exporter in its own unit, and a device with problems flagged.

Fixtures: testdata/dcgm-health.prom (ECC, PCIe and XID fields enabled), the XPU Manager v2 page's
hw_errors_total, the shared samples (memory temperature and bandwidth), and AMD partitions written here.
"""

from __future__ import annotations

import pytest

from llm_d_lens.monitoring.conftest import XPUMD_TARGET
from llm_d_lens.testing.telemetry_pages import by_name, fixture_text, needs_prometheus, refresh, snapshot
from llm_d_lens.testing.prometheus import run_prometheus, to_openmetrics


@pytest.fixture(params=["prometheus", "snapshot"])
def dcgm(request) -> tuple[dict[str, dict], list[str]]:
    if request.param == "prometheus":
        report = refresh(request.getfixturevalue("prometheus").url, ["nvidia"], node="health-node-01")
    else:
        report = snapshot(fixture_text("dcgm-health.prom"), ["nvidia"])
    return by_name(report), report.warnings


def test_dcgm_memory_errors_replays_and_xid_in_common_units(dcgm):
    devices, _ = dcgm
    sick, clean = devices["health-node-01/0"], devices["health-node-01/1"]
    # ECC_SBE_VOL_TOTAL 17, ECC_DBE_VOL_TOTAL 2, PCIE_REPLAY_COUNTER 3 (counts as is), XID_ERRORS 79 (a code)
    assert (sick["ecc_corrected_errors"], sick["ecc_uncorrected_errors"], sick["pcie_replays_count"]) == (17, 2, 3)
    assert sick["critical_event_code"] == 79
    # MEMORY_TEMP 85 C; PROF_DRAM_ACTIVE 0.5 is already a ratio
    assert (sick["memory_temperature_celsius"], sick["memory_bandwidth_ratio"]) == (85, 0.5)
    assert (clean["ecc_uncorrected_errors"], clean["critical_event_code"]) == (0, 0)


def test_a_device_with_uncorrected_errors_or_a_critical_event_is_flagged(dcgm):
    devices, warnings = dcgm
    signals = ["ecc_uncorrected", "critical_event", "ecc_corrected", "pcie_replays", "link_errors"]
    assert devices["health-node-01/0"]["health"] == {
        "status": "problem", "problems": ["uncorrected memory errors: 2", "last critical event code: 79"], "signals": signals}
    # GPU 1's page carries no NVLink error counters
    assert devices["health-node-01/1"]["health"] == {"status": "ok", "problems": [], "signals": signals[:-1]}
    assert "nvidia health-node-01/0: health: uncorrected memory errors: 2; last critical event code: 79" in warnings
    assert not any("health-node-01/1" in w for w in warnings)


def test_a_device_whose_exporter_reports_no_health_field_is_unknown_not_ok(prometheus):
    device = by_name(refresh(prometheus.url, ["nvidia"], node="gpu-node-01"))["gpu-node-01/0"]
    assert device["health"] == {"status": "unknown", "problems": [], "signals": []}
    # the shared sample does carry memory temperature (71 C) and DRAM activity (0.611802)
    assert (device["memory_temperature_celsius"], device["memory_bandwidth_ratio"]) == (71, 0.611802)


def test_amd_memory_temperature_and_umc_activity(prometheus):
    device = by_name(refresh(prometheus.url, ["amd"], node="amd-node-01"))["amd-node-01/PCB049874-0071"]
    # gpu_memory_temperature 58 C; gpu_umc_activity 38 (%) -> 0.38
    assert device["memory_temperature_celsius"] == 58
    assert device["memory_bandwidth_ratio"] == pytest.approx(0.38)


@needs_prometheus
def test_amd_partitions_count_ecc_errors_once_per_gpu():
    """Each CPX partition reports the GPU's ECC counters: folded with max, never multiplied by the partitions."""
    base = {"hostname": "n1", "serial_number": "S1"}
    samples = [("gpu_used_vram", {**base, "gpu_partition_id": str(p)}, 10.0) for p in range(4)]
    samples += [("gpu_ecc_uncorrect_total", {**base, "gpu_partition_id": str(p)}, 3.0) for p in range(4)]
    samples += [("gpu_ecc_correct_total", {**base, "gpu_partition_id": str(p)}, 40.0) for p in range(4)]
    with run_prometheus(to_openmetrics(samples)) as server:
        device = by_name(refresh(server.url, ["amd"]))["n1/S1"]
    assert (device["ecc_uncorrected_errors"], device["ecc_corrected_errors"]) == (3, 40)
    assert device["health"]["problems"] == ["uncorrected memory errors: 3"]


def test_xpu_manager_v2_memory_errors_sum_categories_and_tiles(prometheus):
    node = XPUMD_TARGET["node"]
    devices = by_name(refresh(prometheus.url, ["intel-xpu"], node=node, mode="dra"))
    busy, idle = devices[f"{node}/0000:29:00.0"], devices[f"{node}/0000:9a:00.0"]
    # correctable memory errors 5 + 2 on tile 0, 1 on tile 1; the gpu-type uncorrectable error (4) is not memory
    assert (busy["ecc_corrected_errors"], busy["ecc_uncorrected_errors"]) == (5 + 2 + 1, 0)
    assert busy["health"]["status"] == "ok"
    assert idle["ecc_uncorrected_errors"] == 1 and idle["health"]["status"] == "problem"
    # memory temperature: the hotter tile at hw_sensor_location="memory" (50, 52)
    assert busy["memory_temperature_celsius"] == 52


def test_dcgm_pcie_and_nvlink_throughput_and_link_errors(dcgm):
    devices, _ = dcgm
    sick, clean = devices["health-node-01/0"], devices["health-node-01/1"]
    # PROF_PCIE_TX_BYTES 1.25e9 + RX 7.5e8 (gauges, already bytes per second); NVLink TX 4e10 + RX 3.5e10
    assert sick["pcie_throughput_bytes_per_second"] == 1.25e9 + 7.5e8
    assert sick["link_throughput_bytes_per_second"] == 4.0e10 + 3.5e10
    # NVLink CRC flit 4 + CRC data 1 + replay 0 + recovery 2
    assert sick["link_errors_count"] == 4 + 1 + 0 + 2
    # GPU 1 publishes PCIe but no NVLink fields: none of the NVLink quantities, not zero
    assert clean["pcie_throughput_bytes_per_second"] == 0
    assert (clean["link_throughput_bytes_per_second"], clean["link_errors_count"]) == (None, None)
