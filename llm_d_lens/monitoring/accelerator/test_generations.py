"""Exporter generations and modes through fallback sources: XPU Manager v2, MIG, DCGM without FB_RESERVED.

Fixtures (testdata/, hand-written in each exporter's format): ``xpumd-v2-max1550.prom`` (hw_* names, tiles
under com_intel_subdevice_id), ``dcgm-mig.prom`` (GPU_UTIL absent under MIG), ``dcgm-old-fields.prom`` (no
FB_RESERVED). Every expected value is worked out here from the fixture's numbers.
"""

from __future__ import annotations

import pytest

from llm_d_lens.monitoring.conftest import XPUMD_TARGET
from llm_d_lens.testing.telemetry_pages import by_name, fixture_text, refresh, snapshot

GiB, MiB = 2**30, 2**20
V2_NODE = XPUMD_TARGET["node"]


@pytest.fixture(params=["prometheus", "snapshot"])
def source(request):
    return request.param


def xpu_v2(source: str, request) -> dict[str, dict]:
    if source == "prometheus":
        url = request.getfixturevalue("prometheus").url
        return by_name(refresh(url, ["intel-xpu"], node=V2_NODE, mode="dra"))
    # a direct page has no node label (the ServiceMonitor adds it); the snapshot takes the scraped host
    report = snapshot(fixture_text("xpumd-v2-max1550.prom"), ["intel-xpu"], mode="dra", target=f"{V2_NODE}:8080")
    return by_name(report)


def test_xpu_manager_v2_devices_appear_with_tiles_folded(source, request):
    devices = xpu_v2(source, request)
    assert sorted(devices) == [f"{V2_NODE}/0000:29:00.0", f"{V2_NODE}/0000:9a:00.0"]
    assert all(d["tiles"] == ["0", "1"] for d in devices.values())


def test_xpu_manager_v2_in_common_units(source, request):
    busy = xpu_v2(source, request)[f"{V2_NODE}/0000:29:00.0"]
    # utilisation: per tile the average over hw_gpu_task (0.8, 0.2 -> 0.5; 0.6, 0.0 -> 0.3), then the tiles' average
    assert busy["utilization_ratio"] == pytest.approx((0.5 + 0.3) / 2)
    assert busy["memory_used_bytes"] == (40 + 30) * GiB
    assert busy["memory_total_bytes"] == 2 * 64 * GiB
    assert busy["power_watts"] == 400.5  # device level
    assert busy["energy_joules"] == 1.5e7
    # the hotter tile at hw_sensor_location="gpu" (60, 65); the statistic="max" series (80) is another statistic
    assert busy["temperature_celsius"] == 65
    assert busy["tensor_activity_ratio"] is None  # v2 has no EU activity metric
    assert busy["fallbacks"]["power_watts"] == "hw_power_watts"
    idle = xpu_v2(source, request)[f"{V2_NODE}/0000:9a:00.0"]
    assert idle["memory_used_bytes"] == GiB + GiB // 2
    assert (idle["power_watts"], idle["temperature_celsius"]) == (90.25, 31)


def test_v1_devices_keep_their_own_source(prometheus):
    devices = by_name(refresh(prometheus.url, ["intel-xpu"], node="xpu-node-01", mode="plugin"))
    assert devices["xpu-node-01/0000:29:00.0"]["fallbacks"] == {}
    assert devices["xpu-node-01/0000:29:00.0"]["power_watts"] == 241.5


def mig(source: str, request) -> dict[str, dict]:
    if source == "prometheus":
        return by_name(refresh(request.getfixturevalue("prometheus").url, ["nvidia"], node="mig-node-01"))
    return by_name(snapshot(fixture_text("dcgm-mig.prom"), ["nvidia"]))


def test_mig_instances_get_utilisation_from_the_profiling_ratio(source, request):
    devices = mig(source, request)
    assert sorted(devices) == ["mig-node-01/0", "mig-node-01/0/1", "mig-node-01/0/2", "mig-node-01/1"]
    # DCGM_FI_DEV_GPU_UTIL is absent under MIG; DCGM_FI_PROF_GR_ENGINE_ACTIVE is already a ratio (x1, not /100)
    first, second = devices["mig-node-01/0/1"], devices["mig-node-01/0/2"]
    assert (first["utilization_ratio"], second["utilization_ratio"]) == (0.75, 0.5)
    assert first["fallbacks"] == {"utilization_ratio": "DCGM_FI_PROF_GR_ENGINE_ACTIVE"}
    assert first["memory_total_bytes"] == (30210 + 10110 + 0) * MiB
    # the unpartitioned GPU still reads GPU_UTIL (0 %), not the fallback
    assert devices["mig-node-01/1"]["utilization_ratio"] == 0 and devices["mig-node-01/1"]["fallbacks"] == {}
    # the parent carries power and temperature; no utilisation metric exists for it under MIG
    parent = devices["mig-node-01/0"]
    assert (parent["power_watts"], parent["temperature_celsius"], parent["utilization_ratio"]) == (301.5, 58, None)


def old_dcgm(source: str, request):
    if source == "prometheus":
        return refresh(request.getfixturevalue("prometheus").url, ["nvidia"], node="old-node-01")
    return snapshot(fixture_text("dcgm-old-fields.prom"), ["nvidia"])


def test_memory_total_without_fb_reserved_degrades_to_used_plus_free_and_says_so(source, request):
    report = old_dcgm(source, request)
    devices = by_name(report)
    assert devices["old-node-01/0"]["memory_total_bytes"] == (14200 + 1960) * MiB
    assert devices["old-node-01/1"]["memory_total_bytes"] == (0 + 16160) * MiB
    assert devices["old-node-01/0"]["fallbacks"]["memory_total_bytes"] == "DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE"
    (warning,) = [w for w in report.warnings if "memory_total" in w]
    assert "old-node-01/0, old-node-01/1" in warning and "reserved memory" in warning


def test_a_current_dcgm_reads_the_full_sum_and_warns_nothing(prometheus):
    report = refresh(prometheus.url, ["nvidia"], node="gpu-node-01")
    assert by_name(report)["gpu-node-01/0"]["memory_total_bytes"] == (73421 + 7557 + 581) * MiB
    assert not any("memory_total" in w for w in report.warnings)


def test_a_mig_parent_whose_instances_are_held_is_partitioned_not_idle(source, request):
    devices = mig(source, request)
    parent = devices["mig-node-01/0"]["attribution"]
    assert parent["status"] == "partitioned"
    assert parent["reason"] == "2 of its 2 partitions are held: 1 by mig-serving/vllm-mig-a-0, 2 by mig-serving/vllm-mig-b-0"
    first, second = devices["mig-node-01/0/1"]["attribution"], devices["mig-node-01/0/2"]["attribution"]
    assert (first["status"], first["pod"], second["pod"]) == ("attributed", "vllm-mig-a-0", "vllm-mig-b-0")
    # the unpartitioned GPU: under the operator's default scrape its only pod label is the exporter's, and with
    # no cluster objects nothing shows that no pod holds it
    assert devices["mig-node-01/1"]["attribution"]["status"] == "unattributed"
    assert devices["mig-node-01/1"]["attribution"]["pod"] is None


def test_each_pod_gets_only_its_mig_instance(prometheus):
    report = refresh(prometheus.url, ["nvidia"], node="mig-node-01")
    held = {ref: [a.devices for a in allocations] for ref, allocations in report.pods.items()}
    assert held == {("mig-serving", "vllm-mig-a-0"): [["mig-node-01/0/1"]], ("mig-serving", "vllm-mig-b-0"): [["mig-node-01/0/2"]]}


def test_an_exporter_without_pod_labels_is_joined_through_the_kubelets_resource_ids(source, request):
    """XPU Manager v2 labels no pod: in plugin mode the extended-resource join has nothing to read, so the
    pod-status join (the profile's resource_id_pattern over allocatedResourcesStatus) places the pod."""
    from llm_d_lens.testing.telemetry_pages import cluster, node_object, pod_object

    objects = cluster(
        node_object(V2_NODE, "10.0.2.9"),
        pod_object("vllm-xpu-0", V2_NODE, limits={"gpu.intel.com/i915": "1"},
                   allocated=[("gpu.intel.com/i915", ["intel.com/gpu=0000-29-00-0-0x0bd5"])]),
    )
    if source == "prometheus":
        report = refresh(request.getfixturevalue("prometheus").url, ["intel-xpu"], node=V2_NODE, mode="plugin", cluster=objects)
    else:
        report = snapshot(fixture_text("xpumd-v2-max1550.prom"), ["intel-xpu"], mode="plugin", cluster=objects,
                          target=f"{V2_NODE}:8080")
    devices = by_name(report)
    held = devices[f"{V2_NODE}/0000:29:00.0"]["attribution"]
    assert (held["status"], held["join"], held["pod"]) == ("attributed", "pod-status", "vllm-xpu-0")
    assert devices[f"{V2_NODE}/0000:9a:00.0"]["attribution"]["status"] == "idle"
    assert [a.devices for a in report.pods[("llm-serving", "vllm-xpu-0")]] == [[f"{V2_NODE}/0000:29:00.0"]]
