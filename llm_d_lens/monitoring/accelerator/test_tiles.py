"""Tiles and partitions fold into one physical device, without double counting.

Fixtures (testdata/): 8 x Max 1550 with 2 tiles each, where the exporter also writes its own
device-level aggregates (src="sum"/"avg") and card-level power; and 2 x MI300X in CPX, 8 logical
GPUs each, where only partition 0 reports power, energy, temperature and activity.
"""

from __future__ import annotations

import pytest

from llm_d_lens.testing.telemetry_pages import by_name, fixture_text, needs_prometheus, refresh, snapshot
from llm_d_lens.testing.prometheus import run_prometheus, to_openmetrics

GiB, MiB = 2**30, 2**20
XPU_NODE, AMD_NODE = "xpu-max1550-01", "amd-node-02"


def xpu_devices(source: str, prometheus_url: str | None) -> dict[str, dict]:
    if source == "prometheus":
        return by_name(refresh(prometheus_url, ["intel-xpu"], node=XPU_NODE, mode="plugin"))
    return by_name(snapshot(fixture_text("xpu-max1550-tiles.prom"), ["intel-xpu"], mode="plugin"))


def amd_devices(source: str, prometheus_url: str | None) -> dict[str, dict]:
    if source == "prometheus":
        return by_name(refresh(prometheus_url, ["amd"], node=AMD_NODE))
    return by_name(snapshot(fixture_text("amd-cpx-partitions.prom"), ["amd"]))


@pytest.fixture(params=["prometheus", "snapshot"])
def source(request):
    if request.param == "prometheus":  # the session fixture skips when the binary is absent
        return request.param, request.getfixturevalue("prometheus").url
    return request.param, None


def test_tiles_fold_into_eight_devices(source):
    devices = xpu_devices(*source)
    assert len(devices) == 8
    assert all(d["tiles"] == ["0", "1"] and d["sub_device"] is None for d in devices.values())


def test_a_device_level_series_wins_over_its_tiles(source):
    # 0000:29:00.0: the core reports 455 W for the device; tiles 200 + 210; the exporter's src="sum" 410
    power = xpu_devices(*source)[f"{XPU_NODE}/0000:29:00.0"]["power_watts"]
    assert power == 455.0


def test_tiles_are_summed_once_without_the_exporters_aggregates(source):
    # 0000:3a:00.0 (i=1): tiles 201 + 211 W; the exporter also writes src="sum" 412 and card-level 437
    device = xpu_devices(*source)[f"{XPU_NODE}/0000:3a:00.0"]
    assert device["power_watts"] == 201.0 + 211.0
    # utilisation averages the tiles (0.75, 0.63); the src="avg" aggregate is not averaged in
    assert device["utilization_ratio"] == pytest.approx((0.75 + 0.63) / 2)
    # memory: used 41 GiB + 31 GiB; each tile's total is used / ratio = 64 GiB
    assert device["memory_used_bytes"] == (41 + 31) * GiB
    assert device["memory_total_bytes"] == 2 * 64 * GiB
    # temperature: the hotter tile (61, 66 at location="gpu"); location="mem" is another sensor
    assert device["temperature_celsius"] == 66
    # energy is reported per GPU (device level): 1e7 + 12345.5 J
    assert device["energy_joules"] == 1.0e7 + 12345.5


def test_a_device_with_no_memory_in_use_has_no_total(source):
    # 0000:ca:00.0 uses 0 bytes on both tiles, so xpum_memory_ratio is 0 and used / ratio is undefined
    device = xpu_devices(*source)[f"{XPU_NODE}/0000:ca:00.0"]
    assert device["memory_used_bytes"] == 0
    assert device["memory_total_bytes"] is None
    assert device["power_watts"] == 40.0 + 41.5


def test_card_level_series_leave_no_anonymous_devices(prometheus):
    report = refresh(prometheus.url, ["intel-xpu"], node=XPU_NODE, mode="plugin")
    assert report.warnings == []


def test_partitions_fold_per_hostname_and_serial(source):
    devices = amd_devices(*source)
    assert sorted(devices) == [f"{AMD_NODE}/PCB049874-0201", f"{AMD_NODE}/PCB049874-0202"]
    first = devices[f"{AMD_NODE}/PCB049874-0201"]
    assert first["tiles"] == [str(p) for p in range(8)]
    assert len(first["uuids"]) == 8
    # VRAM is per partition: 8 x 24574 MB, the whole MI300X
    assert first["memory_total_bytes"] == 8 * 24574 * MiB
    # used: partitions 0-4 held (20000, 20100, 20200, 20300, 20400 MB), 5-7 idle (155, 156, 157 MB)
    assert first["memory_used_bytes"] == (20000 + 20100 + 20200 + 20300 + 20400 + 155 + 156 + 157) * MiB
    # power, energy, temperature and activity come from partition 0 (the others report 0 or nothing)
    assert first["power_watts"] == 640
    assert first["energy_joules"] == 4.25e14 / 1e6
    assert first["temperature_celsius"] == 74
    assert first["utilization_ratio"] == 0.88


def test_a_partitioned_gpu_held_by_two_pods_is_unavailable(source):
    devices = amd_devices(*source)
    shared_gpu = devices[f"{AMD_NODE}/PCB049874-0201"]["attribution"]
    assert shared_gpu["status"] == "unavailable"
    assert "llm-serving/vllm-a-0" in shared_gpu["reason"] and "llm-serving/vllm-b-0" in shared_gpu["reason"]
    one_pod = devices[f"{AMD_NODE}/PCB049874-0202"]
    assert (one_pod["attribution"]["status"], one_pod["attribution"]["pod"]) == ("attributed", "vllm-c-0")
    assert one_pod["memory_used_bytes"] == (21000 + 21100 + sum(150 + p for p in range(2, 8))) * MiB
    assert one_pod["power_watts"] == 650


@needs_prometheus
def test_first_takes_partition_zero_then_the_device_level_series():
    samples = [
        # partition 1 reports a stale, larger value: "first" is not "max"
        ("gpu_power_usage", {"hostname": "n1", "serial_number": "S1", "gpu_partition_id": "0"}, 300.0),
        ("gpu_power_usage", {"hostname": "n1", "serial_number": "S1", "gpu_partition_id": "1"}, 900.0),
        # a GPU that cannot be partitioned says "NA": its only series answers
        ("gpu_power_usage", {"hostname": "n1", "serial_number": "S2", "gpu_partition_id": "NA"}, 120.0),
        # a device-level series (no partition label) wins over partition 0
        ("gpu_power_usage", {"hostname": "n1", "serial_number": "S3"}, 500.0),
        ("gpu_power_usage", {"hostname": "n1", "serial_number": "S3", "gpu_partition_id": "0"}, 450.0),
    ]
    expected = {"n1/S1": 300.0, "n1/S2": 120.0, "n1/S3": 500.0}
    with run_prometheus(to_openmetrics(samples)) as server:
        from_prometheus = by_name(refresh(server.url, ["amd"]))
    page = "".join(n + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "} " + str(value) + "\n"
                   for n, labels, value in samples)
    from_page = by_name(snapshot(page, ["amd"]))
    assert {k: v["power_watts"] for k, v in from_prometheus.items()} == expected
    assert {k: v["power_watts"] for k, v in from_page.items()} == expected


@needs_prometheus
def test_per_partition_tensor_activity_is_one_rule_for_the_refresh_the_page_and_the_dashboard():
    """The profiler reports MFMA activity per CPX partition: the device's ratio is their average
    ((40 + 20 + 0 + 60) / 4 % = 0.3), by the refresh, a direct page and the dashboard PromQL alike."""
    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.monitoring.accelerator.plan import plan_for
    from llm_d_lens.monitoring.accelerator.queries import dashboard_query

    base = {"hostname": "n1", "serial_number": "S1", "gpu_compute_partition_type": "cpx"}
    samples = [("gpu_prof_tensor_active_percent", {**base, "gpu_partition_id": str(p)}, value)
               for p, value in enumerate((40.0, 20.0, 0.0, 60.0))]
    samples += [("gpu_used_vram", {**base, "gpu_partition_id": str(p)}, 100.0) for p in range(4)]
    plan = plan_for(get_registry().get("amd"))
    tensor = next(q for q in plan.quantities if q.quantity.key == "tensor_activity")
    with run_prometheus(to_openmetrics(samples)) as server:
        refreshed = by_name(refresh(server.url, ["amd"]))["n1/S1"]["tensor_activity_ratio"]
        (row,) = server.query(dashboard_query(plan, tensor))
    page = "".join(n + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "} " + str(value) + "\n"
                   for n, labels, value in samples)
    from_page = by_name(snapshot(page, ["amd"]))["n1/S1"]["tensor_activity_ratio"]
    assert refreshed == pytest.approx(0.3) and from_page == pytest.approx(0.3)
    assert float(row["value"][1]) == pytest.approx(0.3)
