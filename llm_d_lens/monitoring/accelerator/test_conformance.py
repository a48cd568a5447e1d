"""Every built-in exporter, through a real Prometheus, in common units.

Expected values are worked out here from the sample files (../shared/telemetry/*.prom): the
exporter's number, times the unit factor written out by hand. They agree with the table in the
reference's section 9, which was checked against the samples the same way.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.monitoring.accelerator.plan import QUANTITIES, plan_for
from llm_d_lens.monitoring.accelerator.queries import dashboard_query
from llm_d_lens.monitoring.conftest import EXPORTER_TARGET, GAUDI_TARGET, TPU_TARGET, VLLM_POD
from llm_d_lens.testing.telemetry_pages import (
    NO_OBJECTS,
    by_name,
    cluster,
    needs_prometheus,
    node_object,
    pod_object,
    refresh,
    sample_text,
    snapshot,
)
from llm_d_lens.testing.prometheus import BASE_TIMESTAMP

pytestmark = needs_prometheus
MiB = 2**20


def test_dcgm_in_common_units(prometheus):
    devices = by_name(refresh(prometheus.url, ["nvidia"]))
    busy, idle = devices["gpu-node-01/0"], devices["gpu-node-01/1"]
    # DCGM_FI_DEV_GPU_UTIL 87 (%); FB_USED 73421, FB_FREE 7557, FB_RESERVED 581 (MiB); POWER_USAGE 612.35 W;
    # TOTAL_ENERGY_CONSUMPTION 48213957123 mJ (a counter without _total); GPU_TEMP 63; PIPE_TENSOR_ACTIVE 0.423117
    assert busy["utilization_ratio"] == 0.87
    assert busy["memory_used_bytes"] == 73421 * MiB == 76987498496
    assert busy["memory_total_bytes"] == (73421 + 7557 + 581) * MiB == 85520809984
    assert busy["power_watts"] == 612.35
    assert busy["energy_joules"] == 48213957123 / 1000
    assert busy["temperature_celsius"] == 63
    assert busy["tensor_activity_ratio"] == 0.423117
    assert busy["uuids"] == ["GPU-5e1c8a1d-7b3f-4a52-9c0e-2f6d81b4a937"]
    assert busy["pci_bus_ids"] == ["00000000:18:00.0"]
    assert busy["model"] == "NVIDIA H100 80GB HBM3"
    assert busy["device_id"] == "GPU-5e1c8a1d-7b3f-4a52-9c0e-2f6d81b4a937"
    # GPU 1: util 0, FB_USED 0 + FREE 80978 + RESERVED 581, 71.2 W, 17654331021 mJ, 32 C
    assert (idle["utilization_ratio"], idle["memory_used_bytes"]) == (0, 0)
    assert idle["memory_total_bytes"] == (0 + 80978 + 581) * MiB
    assert (idle["power_watts"], idle["energy_joules"], idle["temperature_celsius"]) == (71.2, 17654331021 / 1000, 32)


def test_both_dcgm_host_label_spellings_name_the_node(prometheus):
    devices = by_name(refresh(prometheus.url, ["nvidia"]))
    # gpu-node-01 carries the release's "Hostname", gpu-node-02 main's "hostname"
    assert sorted(d for d in devices if d.startswith("gpu-node-")) == ["gpu-node-01/0", "gpu-node-01/1", "gpu-node-02/0", "gpu-node-02/1"]
    assert devices["gpu-node-02/0"]["power_watts"] == 612.35


def test_exported_pod_labels_attribute_the_workload_not_the_exporter(prometheus):
    devices = by_name(refresh(prometheus.url, ["nvidia"]))
    held = devices["gpu-node-02/0"]["attribution"]
    assert (held["status"], held["namespace"], held["pod"], held["container"]) == ("attributed", "llm-serving", VLLM_POD, "vllm")


def test_the_exporters_own_pod_on_an_idle_gpu_is_never_its_owner(prometheus):
    # Prometheus adds the exporter pod's own "pod" label to the idle GPU (it has no exported_pod).
    without = by_name(refresh(prometheus.url, ["nvidia"]))["gpu-node-02/1"]
    # and without cluster objects nothing shows that no pod holds it: unattributed, not idle
    assert without["attribution"]["status"] == "unattributed" and without["attribution"]["pod"] is None
    assert without["attribution"]["reason"].startswith(NO_OBJECTS)
    assert without["exporter_pod"] == {"namespace": EXPORTER_TARGET["namespace"], "pod": EXPORTER_TARGET["pod"]}
    objects = cluster(
        pod_object(VLLM_POD, "gpu-node-02", limits={"nvidia.com/gpu": "1"}),
        pod_object(EXPORTER_TARGET["pod"], "gpu-node-02", namespace=EXPORTER_TARGET["namespace"], container="nvidia-dcgm-exporter"),
    )
    with_cluster = by_name(refresh(prometheus.url, ["nvidia"], cluster=objects))
    assert with_cluster["gpu-node-02/1"]["attribution"]["status"] == "idle"
    assert with_cluster["gpu-node-02/0"]["attribution"]["pod"] == VLLM_POD


def test_amd_in_common_units(prometheus):
    devices = by_name(refresh(prometheus.url, ["amd"], node="amd-node-01"))
    busy, idle = devices["amd-node-01/PCB049874-0071"], devices["amd-node-01/PCB049874-0112"]
    # gpu_gfx_activity 94 (%); used 178944 / total 196592 MB (= MiB); gpu_power_usage 688 W;
    # gpu_energy_consumed 3.9124417e14 uJ (a gauge); gpu_junction_temperature 71; tensor 41.7 %
    assert busy["utilization_ratio"] == 94 / 100
    assert busy["memory_used_bytes"] == 178944 * MiB == 187636383744
    assert busy["memory_total_bytes"] == 196592 * MiB == 206141652992
    assert busy["power_watts"] == 688
    assert busy["energy_joules"] == pytest.approx(391244170, rel=1e-15)
    assert busy["temperature_celsius"] == 71
    assert busy["tensor_activity_ratio"] == pytest.approx(0.417)
    assert busy["serials"] == ["PCB049874-0071"] and busy["tiles"] == ["0"]
    assert busy["attribution"]["pod"] == VLLM_POD
    # the idle GPU reports pod="" (empty labels are absent in Prometheus): idle, not owned by anyone
    assert idle["memory_used_bytes"] == 283 * MiB
    assert (idle["power_watts"], idle["energy_joules"], idle["temperature_celsius"]) == (141, pytest.approx(212517330), 38)
    assert idle["attribution"]["status"] == "unattributed" and idle["attribution"]["reason"].startswith(NO_OBJECTS)


def test_intel_xpu_in_common_units(prometheus):
    devices = by_name(refresh(prometheus.url, ["intel-xpu"], node="xpu-node-01", mode="plugin"))
    busy, idle = devices["xpu-node-01/0000:29:00.0"], devices["xpu-node-01/0000:3a:00.0"]
    # xpum_engine_ratio 0.83 (already a ratio); used 41875931136 B; total = used / xpum_memory_ratio 0.8125;
    # xpum_power_watts 241.5; xpum_energy_joules_total 1.8734561234e7 J; temperature{location="gpu"} 61
    assert busy["utilization_ratio"] == 0.83
    assert busy["memory_used_bytes"] == 41875931136
    assert busy["memory_total_bytes"] == 41875931136 / 0.8125 == 51539607552
    assert (busy["power_watts"], busy["energy_joules"], busy["temperature_celsius"]) == (241.5, 18734561.234, 61)
    assert busy["tensor_activity_ratio"] == 0.72
    assert busy["attribution"]["pod"] == VLLM_POD  # kube_pod / kube_namespace / kube_container
    assert idle["memory_total_bytes"] == 402653184 / 0.0078125 == 51539607552
    assert (idle["power_watts"], idle["energy_joules"], idle["temperature_celsius"]) == (42.125, 6120043.5, 29)


def test_gaudi_in_common_units_with_the_node_from_the_target(prometheus):
    devices = by_name(refresh(prometheus.url, ["intel-gaudi"], mode="plugin"))
    node = GAUDI_TARGET["instance"].split(":")[0]  # the exporter has no node label; instance loses its port
    busy, idle = devices[f"{node}/0"], devices[f"{node}/1"]
    # habanalabs_utilization 91 (%); memory bytes as is; habanalabs_power_mW 712000; habanalabs_energy 6.123456789e10 mJ
    assert busy["utilization_ratio"] == 0.91
    assert (busy["memory_used_bytes"], busy["memory_total_bytes"]) == (118111600640, 137438953472)
    assert busy["power_watts"] == 712000 / 1000
    assert busy["energy_joules"] == 6.123456789e10 / 1000
    assert busy["temperature_celsius"] == 58
    assert busy["tensor_activity_ratio"] is None  # Gaudi exposes none
    assert busy["serials"] == ["AN51012874"] and busy["attribution"]["pod"] == VLLM_POD
    assert (idle["power_watts"], idle["energy_joules"]) == (198000 / 1000, 2.3456789012e10 / 1000)
    # pod_name="" says the exporter saw nobody; without cluster objects that is no proof
    assert idle["attribution"]["status"] == "unattributed" and idle["attribution"]["reason"].startswith(NO_OBJECTS)
    named = by_name(refresh(prometheus.url, ["intel-gaudi"], mode="plugin",
                            cluster=cluster(node_object("gaudi-node-01", node))))
    assert sorted(named) == ["gaudi-node-01/0", "gaudi-node-01/1"]


def test_tpu_in_common_units_from_the_device_plugin(prometheus):
    """No TPU sample is shared, so this reads the hand-written testdata/tpu-v6e.prom."""
    node, chip = TPU_TARGET["node"], "4371783459163393063"
    devices = by_name(refresh(prometheus.url, ["google-tpu"]))
    assert sorted(devices) == [f"{node}/{chip}-{i}" for i in range(4)]
    busy = devices[f"{node}/{chip}-0"]
    # duty_cycle 75 (%); memory_used 20 GiB of memory_total 32 GiB (bytes); tensorcore_utilization 55 (%)
    assert busy["utilization_ratio"] == 75 / 100
    assert (busy["memory_used_bytes"], busy["memory_total_bytes"]) == (20 * 2**30, 32 * 2**30)
    assert busy["tensor_activity_ratio"] == 55 / 100
    assert (busy["power_watts"], busy["energy_joules"], busy["temperature_celsius"]) == (None, None, None)
    assert busy["model"] == "tpu-v6e-slice" and busy["device_id"] == f"{chip}-0"
    # the workload's labels arrive as exported_*; the idle chips carry only the device plugin's own pod: idle
    assert busy["attribution"]["pod"] == "vllm-tpu-0" and busy["attribution"]["namespace"] == "serve"
    assert devices[f"{node}/{chip}-2"]["attribution"]["status"] == "unattributed"  # no cluster objects: no proof of idle
    assert devices[f"{node}/{chip}-2"]["exporter_pod"]["pod"] == TPU_TARGET["pod"]
    objects = cluster(pod_object("vllm-tpu-0", node, namespace="serve", limits={"google.com/tpu": "2"}),
                      pod_object(TPU_TARGET["pod"], node, namespace="kube-system", container="tpu-device-plugin"))
    joined = by_name(refresh(prometheus.url, ["google-tpu"], cluster=objects))
    assert [joined[f"{node}/{chip}-{i}"]["attribution"]["status"] for i in range(4)] == ["attributed", "attributed", "idle", "idle"]


@pytest.mark.parametrize(
    "hardware, page, node",
    [
        ("nvidia", "dcgm-exporter.prom", "gpu-node-01"),
        ("amd", "amd-device-metrics-exporter.prom", "amd-node-01"),
        ("intel-xpu", "intel-xpumanager.prom", "xpu-node-01"),
    ],
)
def test_a_direct_snapshot_reads_the_same_numbers_as_prometheus(prometheus, hardware, page, node):
    from_prometheus = by_name(refresh(prometheus.url, [hardware], node=node))
    from_page = by_name(snapshot(sample_text(page), [hardware]))
    assert sorted(from_page) == sorted(from_prometheus)
    for name, device in from_page.items():
        for quantity in QUANTITIES:
            expected = from_prometheus[name][quantity.field]
            if expected is None:
                assert device[quantity.field] is None, (name, quantity.field)
            else:
                assert device[quantity.field] == pytest.approx(expected, rel=1e-12), (name, quantity.field)


def test_one_refresh_sends_one_query_per_hardware_whatever_the_devices(prometheus):
    profile = get_registry().get("amd")
    declared = len(profile.telemetry.device_metric_sources)
    small = refresh(prometheus.url, ["amd"], node="amd-node-01")  # 2 devices
    large = refresh(prometheus.url, ["amd"])  # 4 devices on two nodes, 18 partitions
    assert len(small.devices) == 2 and len(large.devices) == 4
    assert small.queries_sent == large.queries_sent == 2  # the recorded selector (none here), then the hardware
    # separately: the inventory, one per quantity, the sentinel rows, the targets
    assert refresh(prometheus.url, ["amd"], combined=False).queries_sent == declared + 4
    assert refresh(prometheus.url, ["amd", "nvidia", "intel-xpu"]).queries_sent == 4


#: the profiles shipped in llm_d_lens/hardware/profiles (a plugin installed beside them has no fixture here)
BUNDLED = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "hardware" / "profiles").glob("*.json"))
BUILT_IN_WITH_SOURCES = [key for key in BUNDLED if plan_for(get_registry().get(key)) is not None]


def test_every_built_in_exporter_profile_is_held_to_the_refresh():
    assert {"nvidia", "amd", "intel-xpu", "intel-gaudi", "google-tpu"} <= set(BUILT_IN_WITH_SOURCES)


@pytest.mark.parametrize("hardware", BUILT_IN_WITH_SOURCES)
def test_dashboard_queries_agree_with_the_refresh(prometheus, hardware):
    """One rule per quantity: the self-contained PromQL (fold, fallbacks and relabelling inside Prometheus)
    gives the refresh's numbers for every built-in source, tiles, partitions, MIG instances and exporter
    generations included (every fixture is in this Prometheus)."""
    plan = plan_for(get_registry().get(hardware))
    devices = refresh(prometheus.url, [hardware]).devices
    assert len(devices) >= 2
    for quantity in plan.quantities:
        rows = prometheus.query(dashboard_query(plan, quantity), at=BASE_TIMESTAMP)
        from_promql = {
            (r["metric"].get("lens_node", ""), r["metric"]["lens_device"], r["metric"].get("lens_sub", "")): float(r["value"][1])
            for r in rows
        }
        from_refresh = {(d.node, d.device, d.sub): d.values[quantity.quantity.field] for d in devices if quantity.quantity.field in d.values}
        assert from_promql.keys() == from_refresh.keys(), quantity.quantity.key
        for key, value in from_refresh.items():
            assert from_promql[key] == pytest.approx(value, rel=1e-12), (quantity.quantity.key, key)
