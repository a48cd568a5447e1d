"""Health from what default installs collect, per exporter that publishes it.

DCGM: testdata/dcgm-default-l40s.prom carries the default list's health fields (dcgm-exporter
etc/dcp-metrics-included.csv @ 084a245d: DCGM_FI_DEV_ROW_REMAP_FAILURE, _CORRECTABLE_/_UNCORRECTABLE_REMAPPED_ROWS,
DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, DCGM_FI_DEV_XID_ERRORS, DCGM_FI_DEV_PCIE_REPLAY_COUNTER) and none of the ECC or
NVLink error fields (commented out there). AMD: ``gpu_health`` ("0 = Unhealthy | 1 = Healthy",
device-metrics-exporter gpuagent_gpu_metrics.go @ afd0fe81). Gaudi: ``habanalabs_nic_port_status`` per
``port``/``port_type`` (the Intel Gaudi exporter's Go source). Their lines are added to the shared samples
with the labels of each device's own series.
"""

from __future__ import annotations

import pytest

from llm_d_lens.testing.telemetry_pages import by_name, fixture_text, labels_of, refresh, sample_text, snapshot


@pytest.fixture(params=["prometheus", "snapshot"])
def l40s(request) -> tuple[dict[str, dict], list[str]]:
    if request.param == "prometheus":
        report = refresh(request.getfixturevalue("prometheus").url, ["nvidia"], node="l40s-node-01")
    else:
        report = snapshot(fixture_text("dcgm-default-l40s.prom"), ["nvidia"])
    return by_name(report), report.warnings


def test_health_is_known_on_a_dcgm_default_install_page(l40s):
    devices, warnings = l40s
    clean, failed = devices["l40s-node-01/0"], devices["l40s-node-01/1"]
    assert clean["health"]["status"] == "ok"
    assert {"row_remap_failure", "remapped_rows_uncorrectable", "link_traffic"} <= set(clean["health"]["signals"])
    assert failed["health"]["status"] == "problem"
    assert failed["health"]["problems"] == ["memory row remapping failed: 1"]
    assert "nvidia l40s-node-01/1: health: memory row remapping failed: 1" in warnings


def test_dcgm_default_health_fields_in_common_quantities(l40s):
    devices, _ = l40s
    failed = devices["l40s-node-01/1"]
    assert (failed["row_remap_failure_flag"], failed["remapped_rows_uncorrectable_count"],
            failed["remapped_rows_correctable_count"]) == (1, 1, 0)
    assert failed["link_traffic_count"] == 0  # DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL: an L40S has no NVLink traffic
    # an uncorrectable row that was remapped is repaired: counted, not a problem by itself
    assert devices["l40s-node-01/0"]["remapped_rows_uncorrectable_count"] == 0


def test_the_shared_h100_page_without_health_fields_stays_unknown():
    device = by_name(snapshot(sample_text("dcgm-exporter.prom"), ["nvidia"]))["gpu-node-01/0"]
    assert device["health"]["status"] == "unknown" and device["health"]["signals"] == []


def test_amd_gpu_health_zero_is_a_problem_and_one_is_ok():
    text = sample_text("amd-device-metrics-exporter.prom")
    held, idle = (labels_of(text, "gpu_gfx_activity", f'serial_number="{s}"') for s in ("PCB049874-0071", "PCB049874-0112"))
    text += ("# HELP gpu_health Health of the GPU (0 = Unhealthy | 1 = Healthy)\n# TYPE gpu_health gauge\n"
             f"gpu_health{{{held}}} 1\ngpu_health{{{idle}}} 0\n")
    devices = by_name(snapshot(text, ["amd"]))
    assert devices["amd-node-01/PCB049874-0071"]["health"]["status"] == "ok"
    assert devices["amd-node-01/PCB049874-0071"]["device_healthy_flag"] == 1
    unhealthy = devices["amd-node-01/PCB049874-0112"]["health"]
    assert unhealthy["status"] == "problem" and unhealthy["problems"] == ["the exporter reports the device unhealthy"]


def test_gaudi_a_nic_port_down_is_a_problem_and_replays_are_counted():
    text = sample_text("gaudi-metric-exporter.prom")
    first, second = (labels_of(text, "habanalabs_utilization", f'id="{i}"') for i in ("0", "1"))
    ports = "".join(f'habanalabs_nic_port_status{{{labels},port="{p}",port_type="{kind}"}} {status}\n'
                    for labels, statuses in ((first, (1, 1, 1)), (second, (1, 0, 1)))
                    for p, kind, status in zip(("0", "1", "8"), ("internal", "internal", "external"), statuses))
    text += ("# TYPE habanalabs_nic_port_status gauge\n" + ports +
             f"# TYPE habanalabs_pcie_replay_count gauge\nhabanalabs_pcie_replay_count{{{first}}} 0\n"
             f"habanalabs_pcie_replay_count{{{second}}} 4\n")
    devices = {d["device"]: d for d in by_name(snapshot(text, ["intel-gaudi"])).values()}
    assert devices["0"]["links_up_flag"] == 1 and devices["0"]["health"]["status"] == "ok"
    assert devices["1"]["links_up_flag"] == 0  # one port of three is down: the device's links are not all up
    assert devices["1"]["health"]["problems"] == ["a link is down"]
    assert devices["1"]["pcie_replays_count"] == 4
