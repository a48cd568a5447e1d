"""Clocks, power limits, throttling, device-link and PCIe traffic, rows pending remap: each per exporter that publishes it.

Each page is a shared sample with the lines its exporter writes for these quantities added, carrying each
device's own labels (values picked within each device's range; device 0 is busy, device 1 idle). The shared
DCGM page already carries both clocks and the shared Gaudi page its SOC clock and default power limit: those
are read as they are. Names and units come from:

* DCGM: dcgm-exporter etc/default-counters.csv @ d5e5f51 (``DCGM_FI_DEV_SM_CLOCK``, ``DCGM_FI_DEV_MEM_CLOCK``,
  "(in MHz)"); DCGM dcgmlib/dcgm_fields.h (``DCGM_FI_DEV_CLOCKS_EVENT_REASONS`` 112, "bitmask of
  DCGM_CLOCKS_EVENT_REASON_*", with ``DCGM_FI_DEV_CLOCK_THROTTLE_REASONS`` its deprecated alias, so older field lists
  publish that name; ``DCGM_FI_DEV_POWER_MGMT_LIMIT`` 160, "Current Power limit"; the reason bits 0x1 GPU idle,
  0x4 SW power cap, 0x20 SW thermal slowdown). Blank values from dcgm_structs.h.
* AMD: device-metrics-exporter @ afd0fe81, pkg/amdgpu/gpuagent/gpuagent_gpu_metrics.go (``gpu_clock`` "in MHz" with
  ``clock_index``/``clock_type``; ``gpu_xgmi_link_rx``/``_tx`` "Accumulated XGMI Link Data Read/Write in KB" per
  ``link_index``; ``gpu_violation_*_residency_percentage`` and ``_accumulated``, ``gpu_violation_current_accumulated_counter``)
  and docs/configuration/metricslist.md (its ``gpu_clock`` and ``gpu_xgmi_link_rx`` examples: system 132, memory 900,
  link 1 2.776148269e+09). amd-smi's amdsmi_get_violation_status computes the percentage as the residency
  accumulator's increase times 100 over the current accumulated counter's, so their ratio is the share since start.
* Intel XPU Manager v1.3.7 rest/prometheus_exporter/prometheus_exporter_types.py (``xpum_frequency_mhz`` with
  ``location``/``type`` actual|request; ``xpum_pcie_read_bytes``/``_write_bytes`` counters, exposed with ``_total``);
  xpumd v2.0.0 xpumd/receiver/intelxpu/sysman/documentation.md (``hw.frequency`` Hz with ``hw.frequency.domain``
  and ``aggregation``; ``hw.power.limit`` W; ``hw.gpu.io`` bytes with ``network.io.direction``; ``hw.status`` with
  ``hw.state``/``hw.type``) and its chart's dashboard names (``hw_frequency_hertz``, ``hw_gpu_io_bytes_total``).
* Gaudi: the Intel Gaudi exporter's Go source (``habanalabs_clock_soc_mhz``, ``habanalabs_power_default_limit_mW``,
  ``habanalabs_pcie_receive_throughput``/``_transmit_throughput``, ``habanalabs_pending_rows_with_single_bit_ecc_errors``
  and ``_double_bit_``).

Every page is read twice: directly (a snapshot) and through a real Prometheus holding all of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.cli.app import main
from llm_d_lens.testing.prometheus import BASE_TIMESTAMP, run_prometheus, skip_reason
from llm_d_lens.testing.telemetry_pages import as_stored, backfill, by_name, fixture_text, labels_of, refresh, sample_text, snapshot

GAUDI_TARGET = {"instance": "10.0.0.8:41611"}
XPUMD_TARGET = {"instance": "10.0.2.10:8080", "job": "xpumd", "node": "xpu-v2-node-02"}
INT64_NOT_SUPPORTED = "9223372036854775794"  # DCGM_INT64_NOT_SUPPORTED, 0x7ffffffffffffff2
INT32_NOT_SUPPORTED = "2147483634"  # DCGM_INT32_NOT_SUPPORTED, 0x7ffffff2
FP64_BLANK = "140737488355328.0"  # DCGM_FP64_BLANK, 2^47
UINT64_ALL_ONES = "1.8446744073709552e+19"  # what the AMD exporter's float64 gauge prints for 2^64 - 1


def _lines(metric: str, rows: list[tuple[str, str]]) -> str:
    """A metric family: its TYPE line and one sample per (labels, value)."""
    return f"# TYPE {metric} gauge\n" + "".join(f"{metric}{{{labels}}} {value}\n" for labels, value in rows)


def dcgm_page(node: str = "gpu-node-01", reasons_name: str = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
              blank: bool = False) -> str:
    """The shared H100 page (it carries both clocks) with the power limit and the clock event reasons added."""
    text = sample_text("dcgm-exporter.prom").replace("gpu-node-01", node)
    busy, idle = (labels_of(text, "DCGM_FI_DEV_FB_USED", f'gpu="{i}"') for i in ("0", "1"))
    if blank:  # the idle device's SM clock not supported
        text = text.replace(f"DCGM_FI_DEV_SM_CLOCK{{{idle}}} 345", f"DCGM_FI_DEV_SM_CLOCK{{{idle}}} {INT64_NOT_SUPPORTED}")
        assert INT64_NOT_SUPPORTED in text
    return text + (
        _lines("DCGM_FI_DEV_POWER_MGMT_LIMIT", [(busy, "700"), (idle, FP64_BLANK if blank else "700")])
        + _lines(reasons_name, [(busy, "36" if reasons_name.endswith("THROTTLE_REASONS") else "4"),
                                (idle, INT32_NOT_SUPPORTED if blank else "1")])
    )


def amd_page(node: str = "amd-node-01", percentages: bool = True, blank: bool = False) -> str:
    text = sample_text("amd-device-metrics-exporter.prom").replace("amd-node-01", node)
    busy, idle = (labels_of(text, "gpu_gfx_activity", f'serial_number="{s}"') for s in ("PCB049874-0071", "PCB049874-0112"))
    page = text + _lines("gpu_clock", [
        (f'{busy},clock_index="0",clock_type="system"', "2100"), (f'{busy},clock_index="1",clock_type="system"', "2090"),
        (f'{busy},clock_index="8",clock_type="memory"', "1300"), (f'{busy},clock_index="9",clock_type="soc"', "1143"),
        (f'{idle},clock_index="0",clock_type="system"', "132"), (f'{idle},clock_index="8",clock_type="memory"', "900"),
    ])
    page += _lines("gpu_xgmi_link_rx", [(f'{busy},link_index="0"', "0"), (f'{busy},link_index="1"', "2.776148269e+09"),
                                        (f'{idle},link_index="0"', "1500000"), (f'{idle},link_index="1"', UINT64_ALL_ONES if blank else "0")])
    page += _lines("gpu_xgmi_link_tx", [(f'{busy},link_index="0"', "0"), (f'{busy},link_index="1"', "3.539423344e+09"),
                                        (f'{idle},link_index="0"', "0"), (f'{idle},link_index="1"', "0")])
    if percentages:
        page += _lines("gpu_violation_ppt_residency_percentage", [(busy, "12"), (idle, UINT64_ALL_ONES if blank else "0")])
        page += _lines("gpu_violation_socket_thermal_residency_percentage", [(busy, "3"), (idle, "0")])
    else:  # a hypervisor host: the accumulated counters only (metricslist.md marks the percentages baremetal-only)
        page += _lines("gpu_violation_current_accumulated_counter", [(busy, "1000"), (idle, "1000")])
        page += _lines("gpu_violation_ppt_residency_accumulated", [(busy, "250"), (idle, "0")])
        page += _lines("gpu_violation_socket_thermal_residency_accumulated", [(busy, "10"), (idle, "0")])
    return page


def xpum_page() -> str:
    text = sample_text("intel-xpumanager.prom")
    busy, idle = (labels_of(text, "xpum_power_watts", f'pci_bdf="{b}"') for b in ("0000:29:00.0", "0000:3a:00.0"))
    return text + (
        _lines("xpum_frequency_mhz", [(f'{busy},location="gpu",type="actual"', "1550"), (f'{busy},location="gpu",type="request"', "1600"),
                                      (f'{idle},location="gpu",type="actual"', "300"), (f'{idle},location="gpu",type="request"', "300")])
        + _lines("xpum_pcie_read_bytes_total", [(busy, "1.2e+12"), (idle, "5e+08")])
        + _lines("xpum_pcie_write_bytes_total", [(busy, "3.4e+11"), (idle, "2.5e+08")])
    )


def xpumd_page() -> str:
    """xpumd 2.0.0 on two Max 1550 (the v2 fixture); 0000:9a:00.0's memory reports degraded."""
    busy, idle = 'hw_id="0000:29:00.0",pci_bdf="0000:29:00.0"', 'hw_id="0000:9a:00.0",pci_bdf="0000:9a:00.0"'
    frequency = [(f'{dev},com_intel_subdevice_id="{tile}",hw_frequency_domain="gpu",aggregation="{agg}"', value)
                 for dev, values in ((busy, ("1.6e+09", "1.4e+09")), (idle, ("3e+08", "3e+08")))
                 for tile, value in zip("01", values) for agg in ("avg", "max")]
    limits = [(f'{dev},com_intel_power_limit_level="{level}"', watts) for dev in (busy, idle)
              for level, watts in (("sustained", "600"), ("burst", "720"))]
    io = [(f'{busy},network_io_direction="receive"', "2e+11"), (f'{busy},network_io_direction="transmit"', "5e+10"),
          (f'{idle},network_io_direction="receive"', "1e+06"), (f'{idle},network_io_direction="transmit"', "1e+06")]
    status = [(f'{busy},hw_type="gpu",hw_state="ok"', "1"), (f'{busy},hw_type="memory",hw_state="ok"', "1"),
              (f'{idle},hw_type="gpu",hw_state="ok"', "1"), (f'{idle},hw_type="memory",hw_state="ok"', "0"),
              (f'{idle},hw_type="memory",hw_state="degraded"', "1")]
    return (fixture_text("xpumd-v2-max1550.prom") + _lines("hw_frequency_hertz", frequency) + _lines("hw_power_limit_watts", limits)
            + _lines("hw_gpu_io_bytes_total", io) + _lines("hw_status", status))


def gaudi_page() -> str:
    """The shared Gaudi 3 page (it carries the SOC clock and the default power limit) with PCIe and pending rows added."""
    text = sample_text("gaudi-metric-exporter.prom")
    busy, idle = (labels_of(text, "habanalabs_utilization", f'id="{i}"') for i in ("0", "1"))
    return text + (
        _lines("habanalabs_pcie_receive_throughput", [(busy, "1250000"), (idle, "0")])
        + _lines("habanalabs_pcie_transmit_throughput", [(busy, "250000"), (idle, "0")])
        + _lines("habanalabs_pending_rows_with_single_bit_ecc_errors", [(busy, "0"), (idle, "2")])
        + _lines("habanalabs_pending_rows_with_double_bit_ecc_errors", [(busy, "0"), (idle, "1")])
    )


#: (hardware, node) -> the page it is read from
PAGES: dict[tuple[str, str], Callable[[], str]] = {
    ("nvidia", "gpu-node-01"): dcgm_page,
    ("nvidia", "gpu-node-03"): lambda: dcgm_page("gpu-node-03", reasons_name="DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"),
    ("nvidia", "gpu-node-04"): lambda: dcgm_page("gpu-node-04", blank=True),
    ("amd", "amd-node-01"): amd_page,
    ("amd", "amd-node-02"): lambda: amd_page("amd-node-02", percentages=False),
    ("amd", "amd-node-03"): lambda: amd_page("amd-node-03", blank=True),
    ("intel-xpu", "xpu-node-01"): xpum_page,
    ("intel-xpu", "xpu-v2-node-02"): xpumd_page,
    ("intel-gaudi", "10.0.0.8"): gaudi_page,
}
#: how Prometheus holds each page after its scrape (the target's labels where the exporter writes no node)
STORED = {"xpu-v2-node-02": lambda text: as_stored(text, XPUMD_TARGET), "10.0.0.8": lambda text: as_stored(text, GAUDI_TARGET)}
Reader = Callable[[str, str], tuple[dict[str, dict], list[str]]]


@pytest.fixture(scope="module")
def pages_prometheus() -> Iterator[str]:
    if skip_reason():
        pytest.skip(skip_reason() or "")
    texts = [STORED.get(node, lambda t: t)(page()) for (_, node), page in PAGES.items()]
    with run_prometheus(backfill(*texts)) as server:
        yield server.url


@pytest.fixture(params=["snapshot", "prometheus"])
def read(request) -> Reader:
    """``read(hardware, node)``: each device's document keyed by its device id, and the report's warnings."""

    def reader(hardware: str, node: str) -> tuple[dict[str, dict], list[str]]:
        if request.param == "snapshot":
            report = snapshot(PAGES[(hardware, node)](), [hardware])
        else:
            report = refresh(request.getfixturevalue("pages_prometheus"), [hardware], node=node)
        assert report.devices, f"no {hardware} device on {node}"
        return {d["device"]: d for d in by_name(report).values()}, report.warnings

    return reader


def test_dcgm_clocks_power_limit_and_throttle_reasons(read):
    devices, _ = read("nvidia", "gpu-node-01")
    busy, idle = devices["0"], devices["1"]
    assert (busy["core_clock_hertz"], busy["memory_clock_hertz"], busy["power_limit_watts"]) == (1.98e9, 2.619e9, 700)
    assert idle["core_clock_hertz"] == 3.45e8
    # the bitmask as DCGM reports it: 0x4 SW power cap on the busy device, 0x1 GPU idle on the other
    assert (busy["throttle_reasons_bitmask"], idle["throttle_reasons_bitmask"]) == (4, 1)


def test_dcgm_throttle_reasons_under_the_deprecated_name(read):
    devices, _ = read("nvidia", "gpu-node-03")
    assert devices["0"]["throttle_reasons_bitmask"] == 36  # 0x4 SW power cap | 0x20 SW thermal slowdown


def test_dcgm_blanks_in_the_new_fields_are_null_with_the_reason(read):
    devices, _ = read("nvidia", "gpu-node-04")
    idle = devices["1"]
    assert (idle["core_clock_hertz"], idle["power_limit_watts"], idle["throttle_reasons_bitmask"]) == (None, None, None)
    assert "DCGM int64 blank" in idle["unavailable"]["core_clock_hertz"]
    assert "DCGM double blank" in idle["unavailable"]["power_limit_watts"]
    assert "DCGM int32 blank" in idle["unavailable"]["throttle_reasons_bitmask"]
    assert idle["memory_clock_hertz"] == 2.619e9 and devices["0"]["core_clock_hertz"] == 1.98e9  # the others still read


def test_amd_clocks_xgmi_data_and_violation_percentages(read):
    devices, _ = read("amd", "amd-node-01")
    busy, idle = devices["PCB049874-0071"], devices["PCB049874-0112"]
    assert busy["core_clock_hertz"] == 2.095e9  # the mean of its two system clocks; the soc clock is not the core's
    assert (busy["memory_clock_hertz"], idle["core_clock_hertz"], idle["memory_clock_hertz"]) == (1.3e9, 1.32e8, 9e8)
    assert (busy["power_throttle_ratio"], busy["thermal_throttle_ratio"]) == (0.12, 0.03)
    assert (idle["power_throttle_ratio"], idle["thermal_throttle_ratio"]) == (0, 0)
    assert busy["link_data_bytes"] == (2776148269 + 3539423344) * 1024  # KB read and written, summed over the links
    assert idle["link_data_bytes"] == 1500000 * 1024


def test_amd_violation_accumulators_on_a_host_without_percentages(read):
    devices, warnings = read("amd", "amd-node-02")
    busy = devices["PCB049874-0071"]
    assert (busy["power_throttle_ratio"], busy["thermal_throttle_ratio"]) == (0.25, 0.01)
    assert busy["fallbacks"]["power_throttle_ratio"] == (
        "gpu_violation_ppt_residency_accumulated / gpu_violation_current_accumulated_counter")
    assert any("power_throttle of 2 device(s)" in w and "since the counters started" in w for w in warnings)


def test_amd_not_applicable_values_in_the_new_fields_are_null(read):
    devices, _ = read("amd", "amd-node-03")
    idle = devices["PCB049874-0112"]
    assert idle["power_throttle_ratio"] is None and "AMD not-applicable" in idle["unavailable"]["power_throttle_ratio"]
    # one link's all-ones value makes the device's sum (with another link's 1500000 KB) no reading, not 2^64 bytes
    assert idle["link_data_bytes"] is None and "gpu_xgmi_link_rx" in idle["unavailable"]["link_data_bytes"]
    assert devices["PCB049874-0071"]["link_data_bytes"] == (2776148269 + 3539423344) * 1024


def test_intel_xpum_frequency_and_pcie_bytes(read):
    devices, _ = read("intel-xpu", "xpu-node-01")
    busy, idle = devices["0000:29:00.0"], devices["0000:3a:00.0"]
    assert (busy["core_clock_hertz"], idle["core_clock_hertz"]) == (1.55e9, 3e8)  # the actual frequency, not the requested
    assert (busy["pcie_traffic_bytes"], idle["pcie_traffic_bytes"]) == (1.54e12, 7.5e8)  # read + written


def test_intel_xpumd_frequency_power_limit_pcie_bytes_and_hw_status(read):
    devices, _ = read("intel-xpu", "xpu-v2-node-02")
    busy, degraded = devices["0000:29:00.0"], devices["0000:9a:00.0"]
    assert busy["core_clock_hertz"] == 1.5e9  # the two tiles' average frequencies, averaged
    assert (busy["power_limit_watts"], busy["pcie_traffic_bytes"]) == (600, 2.5e11)  # the sustained limit; both directions
    assert (busy["device_healthy_flag"], degraded["device_healthy_flag"]) == (1, 0)
    assert "device_healthy" in busy["health"]["signals"] and busy["health"]["status"] == "ok"
    assert "the exporter reports the device unhealthy" in degraded["health"]["problems"]


def test_gaudi_clock_power_limit_pcie_throughput_and_pending_rows(read):
    devices, _ = read("intel-gaudi", "10.0.0.8")
    busy, idle = devices["0"], devices["1"]
    assert (busy["core_clock_hertz"], idle["core_clock_hertz"]) == (1.6e9, 1.6e9)  # the sample's 1600 MHz
    assert busy["power_limit_watts"] == 900  # the sample's 900000 mW
    assert (busy["pcie_throughput_bytes_per_second"], idle["pcie_throughput_bytes_per_second"]) == (1500000 * 1024, 0)
    assert (idle["pending_rows_correctable_count"], idle["pending_rows_uncorrectable_count"]) == (2, 1)
    assert {"pending_rows_correctable", "pending_rows_uncorrectable"} <= set(busy["health"]["signals"])
    assert busy["health"]["status"] == "ok" and idle["health"]["status"] == "ok"  # pending rows wait for a reset: counted


def test_the_json_output_and_the_wide_table_carry_them(capsys, tmp_path, monkeypatch):
    page = tmp_path / "amd.prom"
    page.write_text(amd_page())
    assert main(["telemetry", "devices", "--snapshot", str(page), "--hardware", "amd", "-o", "json"]) == 0
    devices = {d["device"]: d for d in json.loads(capsys.readouterr().out)["devices"]}
    assert devices["PCB049874-0071"]["power_throttle_ratio"] == 0.12
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["telemetry", "devices", "--snapshot", str(page), "--hardware", "amd", "-o", "wide"]) == 0
    out = capsys.readouterr().out
    assert "CLOCK MHz" in out and " 2095 " in out and " 132 " in out
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["telemetry", "devices", "--snapshot", str(page), "--hardware", "amd"]) == 0
    table = capsys.readouterr().out
    assert "CLOCK MHz" not in table and max(len(line) for line in table.splitlines()) <= 80


def test_the_api_answers_them(pages_prometheus, monkeypatch):
    monkeypatch.setenv("LENS_PROMETHEUS_URL", pages_prometheus)
    monkeypatch.delenv("LENS_CLUSTER_OBJECTS", raising=False)
    answer = TestClient(create_app()).get("/api/v1/telemetry/devices",
                                          params={"hardware": "intel-gaudi", "at": BASE_TIMESTAMP})
    assert answer.status_code == 200
    devices = {d["device"]: d for d in answer.json()["devices"]}
    assert devices["0"]["core_clock_hertz"] == 1.6e9 and devices["1"]["pending_rows_uncorrectable_count"] == 1
