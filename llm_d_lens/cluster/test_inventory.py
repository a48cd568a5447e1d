"""The inventory counts what each profile says is its hardware, and nothing twice.

Every expected figure is worked out by hand from the small cluster each test builds.
"""

from __future__ import annotations

import pytest

from llm_d_lens.cluster.errors import ObjectInvalid, SnapshotInvalid
from llm_d_lens.testing.cluster import (
    attributes,
    bucket,
    claim,
    container,
    device,
    device_class,
    hardware,
    inventory,
    node,
    node_record,
    pod,
    resource_slice,
)

GIB = 2**30
MIB = 2**20

H100_LABELS = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
               "nvidia.com/gpu.memory": "81559", "nvidia.com/gpu.count": "8"}


# -- each built-in vendor through its device plugin -------------------------------------------------


def test_nvidia_device_plugin_counts_gpus_allocation_and_vram_from_the_gfd_label() -> None:
    result = inventory(
        node("gpu-1", labels=H100_LABELS, resources={"nvidia.com/gpu": "8"}),
        pod("a", "gpu-1", limits={"nvidia.com/gpu": "4"}),
        pod("b", "gpu-1", limits={"nvidia.com/gpu": "2"}),
    )
    nvidia = bucket(result, "nvidia")
    assert (nvidia["nodes"], nvidia["devices"], nvidia["allocatable"], nvidia["allocated"], nvidia["available"]) == (1, 8, 8, 6, 2)
    assert nvidia["vram"]["total_bytes"] == 8 * 81559 * MIB
    assert nvidia["vram"]["sources"] == ["node-label:nvidia.com/gpu.memory"]
    assert nvidia["products"] == ["NVIDIA-H100-80GB-HBM3"]
    assert nvidia["request_models"] == ["extended-resource"]
    assert result.total_gpu_count == 8
    assert hardware(result, "gpu-1", "nvidia")["holders"] == [{"holder": "llm/a", "count": 4}, {"holder": "llm/b", "count": 2}]


def test_amd_device_plugin_reads_vram_in_rounded_gib_with_a_g_suffix() -> None:
    labels = {"feature.node.kubernetes.io/amd-gpu": "true", "amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM",
              "amd.com/gpu.vram": "192G"}
    result = inventory(node("mi300x", labels=labels, resources={"amd.com/gpu": "8"}), pod("a", "mi300x", limits={"amd.com/gpu": "1"}))
    amd = bucket(result, "amd")
    assert (amd["devices"], amd["allocated"], amd["available"]) == (8, 1, 7)
    assert amd["vram"]["total_bytes"] == 8 * 192 * GIB
    assert amd["products"] == ["AMD_Instinct_MI300X_OAM"]


def test_intel_gpu_plugin_ignores_its_monitoring_handle_and_reads_the_node_wide_memory_label() -> None:
    labels = {"intel.feature.node.kubernetes.io/gpu": "true", "gpu.intel.com/product": "Max_1100",
              "gpu.intel.com/memory.max": str(4 * 48 * GIB), "gpu.intel.com/device.count": "4",
              "gpu.intel.com/cards": "card0.card1.card2.card3"}
    result = inventory(node("xpu", labels=labels, resources={"gpu.intel.com/i915": "4", "gpu.intel.com/i915_monitoring": "1"}))
    xpu = bucket(result, "intel-xpu")
    assert (xpu["devices"], xpu["allocatable"]) == (4, 4)  # the monitoring resource is not a fifth GPU
    assert xpu["vram"]["total_bytes"] == 4 * 48 * GIB
    assert xpu["vram"]["sources"] == ["node-label:gpu.intel.com/memory.max"]
    assert result.to_dict()["unsupported"] == []  # claimed by the profile, just not a device


def test_gaudi_device_plugin_without_a_product_has_unknown_vram_and_says_why() -> None:
    result = inventory(node("gaudi", resources={"habana.ai/gaudi": "8"}), pod("a", "gaudi", limits={"habana.ai/gaudi": "2"}))
    gaudi = bucket(result, "intel-gaudi")
    assert (gaudi["devices"], gaudi["allocated"], gaudi["available"]) == (8, 2, 6)
    assert gaudi["vram"]["total_bytes"] == 0
    assert gaudi["vram"]["devices_without_vram"] == 8
    assert any("no product or memory is published" in n and "Gaudi3" in n for n in hardware(result, "gaudi", "intel-gaudi")["notes"])


def test_tpu_chips_take_vram_per_chip_from_the_memory_model_of_the_accelerator_label() -> None:
    labels = {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "2x4"}
    result = inventory(node("tpu", labels=labels, resources={"google.com/tpu": "8"}), pod("a", "tpu", limits={"google.com/tpu": "8"}))
    tpu = bucket(result, "google-tpu")
    assert (tpu["devices"], tpu["allocated"], tpu["available"]) == (8, 8, 0)
    assert tpu["vram"]["total_bytes"] == 8 * 32 * GIB
    assert tpu["vram"]["sources"] == ["memory-model:tpu-v6e-slice"]


# -- each built-in vendor through its DRA driver -----------------------------------------------------


@pytest.mark.parametrize(
    ("driver", "profile_id", "attrs", "capacity", "vram_bytes", "vram_source", "product"),
    [
        ("gpu.nvidia.com", "nvidia", attributes(type="gpu", productName="NVIDIA H100 80GB HBM3"), {"memory": "81559Mi"},
         81559 * MIB, "dra-capacity", "NVIDIA H100 80GB HBM3"),
        ("gpu.amd.com", "amd", attributes(type="amdgpu", productName="AMD Instinct MI300X"), {"memory": "196592Mi"},
         196592 * MIB, "dra-capacity", "AMD Instinct MI300X"),
        # Intel publishes memory "0" without xpumd: the memory model for the model name fills in.
        ("gpu.intel.com", "intel-xpu", attributes(type="gpu", model="Max 1550"), {"memory": "0", "millicores": "1k"},
         128 * GIB, "memory-model:Max 1550", "Max 1550"),
        ("gaudi.intel.com", "intel-gaudi", attributes(model="Gaudi3", healthy=True), None,
         128 * GIB, "memory-model:Gaudi3", "Gaudi3"),
    ],
)
def test_each_dra_driver_counts_its_devices_vram_and_claims(driver: str, profile_id: str, attrs: dict, capacity: dict | None,
                                                           vram_bytes: int, vram_source: str, product: str) -> None:
    devices = [device(f"dev-{i}", attrs=attrs, capacity=capacity) for i in range(4)]
    result = inventory(
        node("n1"),
        resource_slice("n1-slice", driver=driver, node_name="n1", devices=devices),
        claim("c1", results=[(driver, "n1", "dev-0"), (driver, "n1", "dev-1")], reserved_for=["p1"], node_name="n1"),
        pod("p1", "n1", claims=[{"name": "gpus", "resourceClaimName": "c1"}]),
    )
    entry = bucket(result, profile_id)
    assert (entry["devices"], entry["allocatable"], entry["allocated"], entry["available"]) == (4, 4, 2, 2)
    assert entry["vram"]["total_bytes"] == 4 * vram_bytes
    assert entry["vram"]["sources"] == [vram_source]
    assert entry["products"] == [product]
    assert entry["request_models"] == ["dra"]
    assert hardware(result, "n1", profile_id)["holders"] == [{"holder": "llm/p1", "count": 2}]


def test_the_tpu_profile_has_no_dra_driver_so_tpu_inventory_is_plugin_only() -> None:
    from llm_d_lens.hardware.registry import get_registry

    assert get_registry().get("google-tpu").inventory.dra_drivers == []


def test_cpu_pool_on_dra_reports_consumable_capacity_and_is_not_an_accelerator() -> None:
    cpus = [device(f"cpudevnuma00{i}", attrs=attributes(**{"dra.cpu__numCPUs": 96, "resource.kubernetes.io__numaNode": i}),
                   capacity={"dra.cpu/cpu": "96"}, allowMultipleAllocations=True) for i in range(2)]
    result = inventory(
        node("cpu-1"),
        resource_slice("cpu-1-dra.cpu", driver="dra.cpu", node_name="cpu-1", devices=cpus),
        claim("a", results=[("dra.cpu", "cpu-1", "cpudevnuma000")], consumed={"dra.cpu/cpu": "32"}, reserved_for=["p1"]),
        claim("b", results=[("dra.cpu", "cpu-1", "cpudevnuma001")], consumed={"dra.cpu/cpu": "16"}, reserved_for=["p2"]),
        claim("c", results=[("dra.cpu", "cpu-1", "cpudevnuma001")], consumed={"dra.cpu/cpu": "80"}, reserved_for=["p3"]),
    )
    cpu = bucket(result, "cpu")
    assert cpu["accelerator"] is False
    assert cpu["devices"] == 2
    assert cpu["capacity"] == {"dra.cpu/cpu": {"total": 192, "consumed": 128}}
    # numa0 has 64 CPUs left; numa1 is used up (16 + 80 = 96 of 96), so only numa0 can take another claim.
    assert (cpu["allocated"], cpu["available"]) == (1, 1)
    assert cpu["vram"] == {"total_bytes": 0, "total_gib": 0.0, "devices_with_vram": 0, "devices_without_vram": 0, "sources": []}
    assert result.total_gpu_count == 0


# -- partitions ------------------------------------------------------------------------------------


def test_mig_mixed_strategy_counts_physical_gpus_from_the_count_label_and_slices_as_partitions() -> None:
    labels = {**H100_LABELS, "nvidia.com/mig.strategy": "mixed"}
    result = inventory(
        node("mig", labels=labels, resources={"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "56"}),
        *[pod(f"p{i}", "mig", limits={"nvidia.com/mig-1g.10gb": "1"}) for i in range(3)],
    )
    nvidia = bucket(result, "nvidia")
    assert (nvidia["devices"], nvidia["partitions"]) == (8, 56)  # neither 0 GPUs nor 64 "devices"
    assert (nvidia["allocatable"], nvidia["allocated"], nvidia["available"]) == (56, 3, 53)
    assert nvidia["vram"]["total_bytes"] == 8 * 81559 * MIB
    assert result.total_gpu_count == 8


def test_mig_mixed_with_some_whole_gpus_keeps_both_kinds_apart() -> None:
    result = inventory(node("mig", labels=H100_LABELS, resources={"nvidia.com/gpu": "4", "nvidia.com/mig-1g.10gb": "28"}),
                       pod("whole", "mig", limits={"nvidia.com/gpu": "2"}), pod("slice", "mig", limits={"nvidia.com/mig-1g.10gb": "1"}))
    entry = hardware(result, "mig", "nvidia")
    assert (entry["devices"], entry["partitions"], entry["allocatable"], entry["allocated"], entry["available"]) == (8, 28, 32, 3, 29)
    kinds = {c["name"]: c["kind"] for c in entry["channels"]}
    assert kinds == {"nvidia.com/gpu": "device", "nvidia.com/mig-1g.10gb": "partition"}


def test_amd_compute_partitions_without_a_count_label_say_the_physical_count_is_unknown() -> None:
    result = inventory(node("cpx", labels={"feature.node.kubernetes.io/amd-gpu": "true"}, resources={"amd.com/cpx_nps4": "64"}))
    amd = hardware(result, "cpx", "amd")
    assert (amd["devices"], amd["partitions"], amd["allocatable"]) == (0, 64, 64)
    assert any("physical device count is not published" in n for n in amd["notes"])


def test_static_mig_devices_on_dra_are_partitions_and_whole_gpus_are_devices() -> None:
    devices = [device("gpu-0", attrs=attributes(type="gpu", productName="NVIDIA H100 80GB HBM3"), capacity={"memory": "81559Mi"}),
               *[device(f"gpu-1-mig-1g10gb-{i}", attrs=attributes(type="mig", productName="NVIDIA H100 80GB HBM3"),
                        capacity={"memory": "9984Mi"}) for i in range(7)]]
    result = inventory(node("n"), resource_slice("s", driver="gpu.nvidia.com", node_name="n", devices=devices))
    entry = hardware(result, "n", "nvidia")
    assert (entry["devices"], entry["partitions"], entry["allocatable"]) == (1, 7, 8)
    assert entry["vram"]["total_bytes"] == 81559 * MIB  # a partition's memory is part of its GPU's, not added to it


def test_dynamic_partitions_are_possibilities_until_allocated_and_then_occupy_their_gpu() -> None:
    def counters(gpu: int) -> list[dict]:
        return [{"counterSet": f"gpu-{gpu}-counters", "counters": {"memory": {"value": "80Gi"}}}]

    devices = [device(f"gpu-{g}", attrs=attributes(type="gpu"), capacity={"memory": "81559Mi"}, consumesCounters=counters(g))
               for g in range(2)]
    devices += [device(f"gpu-{g}-mig-1g-{p}", attrs=attributes(type="mig"), consumesCounters=counters(g)) for g in range(2) for p in range(7)]
    result = inventory(node("n"), resource_slice("s", driver="gpu.nvidia.com", node_name="n", devices=devices),
                       claim("c", results=[("gpu.nvidia.com", "n", "gpu-0-mig-1g-3")], reserved_for=["p"]))
    entry = hardware(result, "n", "nvidia")
    # 14 possible MIG placements are not 14 partitions; one taken slice makes gpu-0 unavailable as a whole.
    assert (entry["devices"], entry["partitions"], entry["allocatable"], entry["allocated"], entry["available"]) == (2, 0, 2, 1, 1)


# -- pools, generations, duplicates ---------------------------------------------------------------


def test_a_pool_split_over_slices_counts_each_device_once_and_only_the_newest_generation() -> None:
    gpus = [device(f"gpu-{i}", attrs=attributes(type="gpu"), capacity={"memory": "143771Mi"}) for i in range(8)]
    result = inventory(
        node("h200"),
        resource_slice("old", driver="gpu.nvidia.com", node_name="h200", pool="h200", devices=gpus, generation=1),
        resource_slice("new-a", driver="gpu.nvidia.com", node_name="h200", pool="h200", devices=gpus[:4], generation=2, slice_count=2),
        resource_slice("new-b", driver="gpu.nvidia.com", node_name="h200", pool="h200", devices=gpus[3:], generation=2, slice_count=2),
    )
    entry = hardware(result, "h200", "nvidia")
    assert entry["devices"] == 8  # not 16 (old generation) and not 9 (gpu-3 listed in both new slices)
    assert entry["vram"]["total_bytes"] == 8 * 143771 * MIB


def test_an_incomplete_pool_is_counted_as_published_and_reported() -> None:
    gpus = [device(f"gpu-{i}", attrs=attributes(type="gpu")) for i in range(4)]
    result = inventory(node("n"), resource_slice("a", driver="gpu.nvidia.com", node_name="n", devices=gpus, generation=5, slice_count=3))
    assert hardware(result, "n", "nvidia")["devices"] == 4
    assert any("1 of 3 ResourceSlices of generation 5" in n for n in result.notes)


def test_v1beta1_devices_nested_under_basic_and_qualified_attribute_names_are_read() -> None:
    qualified = {"gpu.nvidia.com/type": {"string": "gpu"}, "gpu.nvidia.com/productName": {"string": "NVIDIA H200"}}
    devices = [{"name": f"gpu-{i}", "basic": {"attributes": qualified, "capacity": {"gpu.nvidia.com/memory": {"value": "143771Mi"}}}}
               for i in range(2)]
    result = inventory(node("n"), resource_slice("s", driver="gpu.nvidia.com", node_name="n", devices=devices))
    entry = hardware(result, "n", "nvidia")
    assert (entry["devices"], entry["products"], entry["vram"]["total_bytes"]) == (2, ["NVIDIA H200"], 2 * 143771 * MIB)


def test_a_tainted_dra_device_is_not_allocatable_nor_available() -> None:
    gpus = [device(f"d{i}", attrs=attributes(type="gpu", model="Max 1550"), capacity={"memory": "128Gi"}) for i in range(4)]
    gpus[3]["taints"] = [{"key": "HealthIssues-memory", "effect": "NoExecute"}]
    result = inventory(node("n"), resource_slice("s", driver="gpu.intel.com", node_name="n", devices=gpus),
                       claim("c", results=[("gpu.intel.com", "n", "d0")], reserved_for=["p"]))
    entry = hardware(result, "n", "intel-xpu")
    assert (entry["devices"], entry["allocatable"], entry["allocated"], entry["available"]) == (4, 3, 1, 2)


# -- one device, two ways of seeing it ---------------------------------------------------------------


def test_the_same_gpus_through_a_device_plugin_and_a_dra_driver_count_once() -> None:
    gpus = [device(f"gpu-{i}", attrs=attributes(type="gpu"), capacity={"memory": "81559Mi"}) for i in range(8)]
    result = inventory(
        node("both", labels=H100_LABELS, resources={"nvidia.com/gpu": "8"}),
        resource_slice("s", driver="gpu.nvidia.com", node_name="both", devices=gpus),
        pod("plugin-user", "both", limits={"nvidia.com/gpu": "2"}),
        claim("c", results=[("gpu.nvidia.com", "both", "gpu-7")], reserved_for=["dra-user"]),
    )
    entry = hardware(result, "both", "nvidia")
    assert (entry["devices"], entry["allocatable"], entry["allocated"], entry["available"]) == (8, 8, 3, 5)
    assert entry["vram"]["total_bytes"] == 8 * 81559 * MIB
    assert entry["request_models"] == ["dra", "extended-resource"]
    assert any("counted once" in n for n in entry["notes"])
    assert result.total_gpu_count == 8


def test_an_extended_resource_request_met_by_dra_is_held_once_by_its_claim() -> None:
    gpus = [device(f"gpu-{i}", attrs=attributes(type="gpu")) for i in range(8)]
    result = inventory(
        node("dra-node", labels={"nvidia.com/gpu.present": "true"}),
        resource_slice("s", driver="gpu.nvidia.com", node_name="dra-node", devices=gpus),
        device_class("gpu.nvidia.com", driver="gpu.nvidia.com", extended_resource="nvidia.com/gpu"),
        pod("p", "dra-node", limits={"nvidia.com/gpu": "2"}, status={"extendedResourceClaimStatus": {
            "resourceClaimName": "p-extended-resources-x", "requestMappings": [
                {"containerName": "main", "resourceName": "nvidia.com/gpu", "requestName": "container-0-request-0"}]}}),
        claim("p-extended-resources-x", results=[("gpu.nvidia.com", "dra-node", "gpu-0"), ("gpu.nvidia.com", "dra-node", "gpu-1")],
              reserved_for=["p"]),
    )
    entry = hardware(result, "dra-node", "nvidia")
    assert (entry["devices"], entry["allocated"], entry["available"]) == (8, 2, 6)
    assert node_record(result, "dra-node")["notes"] == []


def test_an_extended_request_on_a_dra_node_without_the_status_mapping_is_still_not_counted_twice() -> None:
    gpus = [device(f"gpu-{i}", attrs=attributes(type="gpu")) for i in range(4)]
    result = inventory(
        node("dra-node"), resource_slice("s", driver="gpu.nvidia.com", node_name="dra-node", devices=gpus),
        device_class("gpu.nvidia.com", driver="gpu.nvidia.com", extended_resource="nvidia.com/gpu"),
        pod("p", "dra-node", limits={"nvidia.com/gpu": "1"}),
        claim("p-extended-resources-y", results=[("gpu.nvidia.com", "dra-node", "gpu-0")], reserved_for=["p"]),
    )
    assert hardware(result, "dra-node", "nvidia")["allocated"] == 1


def test_a_request_for_a_resource_the_node_does_not_advertise_is_reported_not_counted() -> None:
    result = inventory(node("n", labels=H100_LABELS, resources={"nvidia.com/gpu": "8"}), pod("odd", "n", limits={"nvidia.com/mig-1g.10gb": "1"}))
    assert hardware(result, "n", "nvidia")["allocated"] == 0
    assert node_record(result, "n")["notes"] == ["pods hold 1 nvidia.com/mig-1g.10gb, which this node does not advertise"]


# -- no cross-talk ---------------------------------------------------------------------------------


def test_a_heterogeneous_cluster_keeps_every_vendor_in_its_own_bucket() -> None:
    result = inventory(
        node("nv", labels=H100_LABELS, resources={"nvidia.com/gpu": "8"}),
        node("amd", labels={"amd.com/gpu.vram": "192G"}, resources={"amd.com/gpu": "8"}),
        node("mixed", resources={"nvidia.com/gpu": "2", "amd.com/gpu": "1"}),
        pod("n", "nv", limits={"nvidia.com/gpu": "8"}),
        pod("a", "amd", limits={"amd.com/gpu": "3"}),
        pod("m", "mixed", limits={"amd.com/gpu": "1"}),
    )
    nvidia, amd = bucket(result, "nvidia"), bucket(result, "amd")
    assert (nvidia["nodes"], nvidia["devices"], nvidia["allocated"], nvidia["available"]) == (2, 10, 8, 2)
    assert (amd["nodes"], amd["devices"], amd["allocated"], amd["available"]) == (2, 9, 4, 5)
    assert nvidia["vram"]["total_bytes"] == 8 * 81559 * MIB and nvidia["vram"]["devices_without_vram"] == 2
    assert amd["vram"]["total_bytes"] == 8 * 192 * GIB and amd["vram"]["devices_without_vram"] == 1
    assert result.total_gpu_count == 19


def test_pci_presence_labels_alone_are_not_accelerators() -> None:
    traps = {"feature.node.kubernetes.io/pci-1a03.present": "true", "feature.node.kubernetes.io/pci-1234.present": "true",
             "feature.node.kubernetes.io/pci-8086.present": "true", "feature.node.kubernetes.io/pci-10de.present": "true",
             "feature.node.kubernetes.io/pci-0300_1002.present": "true", "feature.node.kubernetes.io/pci-15b3.present": "true"}
    result = inventory(node("bmc", labels=traps))
    assert result.to_dict()["vendors"] == []
    assert node_record(result, "bmc")["hardware"] == []


# -- allocation ---------------------------------------------------------------------------------


def test_only_bound_unfinished_pods_hold_devices_and_unbound_ones_are_pending_demand() -> None:
    result = inventory(
        node("n", labels=H100_LABELS, resources={"nvidia.com/gpu": "8"}),
        pod("running", "n", limits={"nvidia.com/gpu": "1"}),
        pod("starting", "n", phase="Pending", limits={"nvidia.com/gpu": "2"}),  # bound: its devices are reserved
        pod("done", "n", phase="Succeeded", limits={"nvidia.com/gpu": "4"}),
        pod("crashed", "n", phase="Failed", limits={"nvidia.com/gpu": "4"}),
        pod("waiting", None, phase="Pending", limits={"nvidia.com/gpu": "4"}),
    )
    nvidia = bucket(result, "nvidia")
    assert (nvidia["allocated"], nvidia["available"]) == (3, 5)
    assert nvidia["pending"] == {"requests": 1, "units": 4}


def test_requests_follow_the_scheduler_rule_for_init_containers_and_sidecars() -> None:
    gpu = "nvidia.com/gpu"
    result = inventory(
        node("n", labels=H100_LABELS, resources={gpu: "8"}),
        # app containers 1 + 1, a sidecar 1 => 3; the init container wants 4 with the sidecar before it => 5? No:
        # the sidecar starts after the init container here, so the init peak is 4 and the pod holds max(3, 4) = 4.
        pod("p", "n", containers=[container("a", limits={gpu: "1"}), container("b", limits={gpu: "1"})],
            init=[container("warmup", limits={gpu: "4"}), container("proxy", limits={gpu: "1"}, restart_policy="Always")]),
        # a sidecar started before an init container adds to that init container's peak: 1 + 3 = 4 > 1 + 1 (app + sidecar)
        pod("q", "n", containers=[container("a", limits={gpu: "1"})],
            init=[container("proxy", limits={gpu: "1"}, restart_policy="Always"), container("warmup", limits={gpu: "3"})]),
    )
    assert hardware(result, "n", "nvidia")["holders"] == [{"holder": "llm/p", "count": 4}, {"holder": "llm/q", "count": 4}]


def test_a_request_without_a_limit_and_a_limit_without_a_request_both_count_once() -> None:
    gpu = "nvidia.com/gpu"
    result = inventory(node("n", resources={gpu: "8"}),
                       pod("limits-only", "n", containers=[container(limits={gpu: "2"})]),
                       pod("both", "n", containers=[container(limits={gpu: "3"}, requests={gpu: "3"})]))
    assert hardware(result, "n", "nvidia")["allocated"] == 5


def test_more_held_than_allocatable_is_an_overcommit_and_available_never_goes_negative() -> None:
    result = inventory(node("n", resources={"nvidia.com/gpu": "8"}, allocatable={"nvidia.com/gpu": "6"}),
                       pod("a", "n", limits={"nvidia.com/gpu": "4"}), pod("b", "n", limits={"nvidia.com/gpu": "4"}))
    entry = hardware(result, "n", "nvidia")
    assert (entry["devices"], entry["allocatable"], entry["allocated"], entry["available"], entry["overcommitted"]) == (8, 6, 8, 0, 2)
    assert any("over-committed" in n for n in entry["notes"])


def test_time_sliced_gpus_count_physical_devices_from_the_count_label_and_replicas_as_allocatable() -> None:
    labels = {**H100_LABELS, "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing"}
    result = inventory(node("n", labels=labels, resources={"nvidia.com/gpu": "32"}), pod("a", "n", limits={"nvidia.com/gpu": "3"}))
    entry = hardware(result, "n", "nvidia")
    assert (entry["devices"], entry["allocatable"], entry["allocated"], entry["available"]) == (8, 32, 3, 29)
    assert entry["vram"]["total_bytes"] == 8 * 81559 * MIB


def test_a_claim_whose_pod_failed_still_holds_its_devices_and_says_so() -> None:
    gpus = [device(f"d{i}", attrs=attributes(type="gpu", model="Max 1550"), capacity={"memory": "128Gi"}) for i in range(4)]
    result = inventory(
        node("n"), resource_slice("s", driver="gpu.intel.com", node_name="n", devices=gpus),
        pod("failed", "n", phase="Failed", claims=[{"name": "gpus", "resourceClaimTemplateName": "t"}]),
        claim("failed-gpus-abc", results=[("gpu.intel.com", "n", "d0"), ("gpu.intel.com", "n", "d1")], reserved_for=["failed"]),
    )
    entry = hardware(result, "n", "intel-xpu")
    assert (entry["allocated"], entry["available"]) == (2, 2)
    assert any("llm/failed-gpus-abc" in n and "finished" in n for n in result.notes)


def test_an_unallocated_claim_is_pending_demand_and_holds_nothing() -> None:
    gpus = [device(f"d{i}", attrs=attributes(type="gpu")) for i in range(4)]
    result = inventory(node("n"), resource_slice("s", driver="gpu.intel.com", node_name="n", devices=gpus),
                       device_class("gpu.intel.com", driver="gpu.intel.com"),
                       claim("big", results=None, requests=[{"name": "gpus", "exactly": {
                           "deviceClassName": "gpu.intel.com", "allocationMode": "ExactCount", "count": 8}}]))
    xpu = bucket(result, "intel-xpu")
    assert (xpu["allocated"], xpu["available"], xpu["pending"]) == (0, 4, {"requests": 1, "units": 8})


def test_a_claim_on_a_device_no_slice_publishes_is_counted_and_reported() -> None:
    gpus = [device(f"d{i}", attrs=attributes(type="gpu")) for i in range(2)]
    result = inventory(node("n"), resource_slice("s", driver="gpu.intel.com", node_name="n", devices=gpus),
                       claim("c", results=[("gpu.intel.com", "n", "gone")], reserved_for=["p"], node_name="n"))
    entry = hardware(result, "n", "intel-xpu")
    assert (entry["allocatable"], entry["allocated"], entry["overcommitted"]) == (2, 1, 1)
    assert any("gpu.intel.com/n/gone" in n for n in entry["notes"])


def test_a_device_allocated_by_two_claims_is_held_once_and_reported() -> None:
    gpus = [device(f"d{i}", attrs=attributes(type="gpu")) for i in range(2)]
    result = inventory(node("n"), resource_slice("s", driver="gpu.intel.com", node_name="n", devices=gpus),
                       claim("a", results=[("gpu.intel.com", "n", "d0")], reserved_for=["p"]),
                       claim("b", results=[("gpu.intel.com", "n", "d0")], reserved_for=["q"]))
    assert hardware(result, "n", "intel-xpu")["allocated"] == 1
    assert any("allocated to both llm/p and llm/q" in n for n in result.notes)


def test_admin_access_results_share_a_device_without_holding_it() -> None:
    gpus = [device("d0", attrs=attributes(type="gpu"))]
    admin = claim("monitor", results=[("gpu.intel.com", "n", "d0")], reserved_for=["exporter"])
    admin["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = True
    result = inventory(node("n"), resource_slice("s", driver="gpu.intel.com", node_name="n", devices=gpus), admin)
    assert hardware(result, "n", "intel-xpu")["available"] == 1


# -- node state and presence ---------------------------------------------------------------------


def test_not_ready_and_cordoned_nodes_are_listed_but_left_out_of_schedulable() -> None:
    result = inventory(
        node("ok", resources={"nvidia.com/gpu": "8"}),
        node("down", resources={"nvidia.com/gpu": "8"}, ready=False),
        node("no-status", resources={"nvidia.com/gpu": "8"}, ready=None),
        node("cordoned", resources={"nvidia.com/gpu": "8"}, unschedulable=True),
    )
    nvidia = bucket(result, "nvidia")
    assert (nvidia["nodes"], nvidia["devices"], nvidia["available"]) == (4, 32, 32)
    assert nvidia["schedulable"] == {"nodes": 1, "allocatable": 8, "available": 8}
    summary = result.summary()
    assert (summary["not_ready_nodes"], summary["cordoned_nodes"], summary["schedulable_available"]) == (2, 1, 8)
    assert [n["schedulable"] for n in result.to_dict()["nodes"]] == [False, False, False, True]  # cordoned, down, no-status, ok


def test_labels_without_advertised_devices_say_the_driver_may_be_missing() -> None:
    result = inventory(node("new", labels={"feature.node.kubernetes.io/amd-gpu": "true", "amd.com/gpu.vram": "192G"}))
    amd = bucket(result, "amd")
    assert (amd["nodes"], amd["devices"], amd["nodes_without_devices"]) == (1, 0, 1)
    assert amd["vram"]["total_bytes"] == 0  # no device, no VRAM, however the label reads
    notes = hardware(result, "new", "amd")["notes"]
    assert notes == ["present by node labels (feature.node.kubernetes.io/amd-gpu=true), 0 devices advertised: driver missing? "
                     "(lens driver status --hardware amd)"]


def test_a_cpu_node_found_by_labels_needs_no_driver() -> None:
    result = inventory(node("spr", labels={"feature.node.kubernetes.io/cpu-cpuid.AMXBF16": "true"}))
    notes = hardware(result, "spr", "cpu")["notes"]
    assert notes == ["present by node labels (feature.node.kubernetes.io/cpu-cpuid.AMXBF16=true); this hardware needs no device advertising"]


# -- what no profile claims ----------------------------------------------------------------------


def test_unknown_resources_drivers_and_classes_are_listed_as_unsupported_never_errors() -> None:
    result = inventory(
        node("fpga", resources={"example.com/fpga": "2", "rdma/hca_shared": "1k", "smarter-devices/fuse": "bogus"}),
        node("fpga-2", resources={"example.com/fpga": "1"}),
        resource_slice("net", driver="nic.example.net", node_name="fpga", devices=[device("eth0"), device("eth1")]),
        device_class("nics.example.com", driver="nic.example.net"),
        device_class("gpu.intel.com", driver="gpu.intel.com"),
    )
    unsupported = result.to_dict()["unsupported"]
    assert unsupported == [
        {"kind": "device-class", "name": "nics.example.com", "nodes": [], "quantity": 0},
        {"kind": "dra-driver", "name": "nic.example.net", "nodes": ["fpga"], "quantity": 2},
        {"kind": "resource", "name": "example.com/fpga", "nodes": ["fpga", "fpga-2"], "quantity": 3},
        {"kind": "resource", "name": "rdma/hca_shared", "nodes": ["fpga"], "quantity": 1000},
        {"kind": "resource", "name": "smarter-devices/fuse", "nodes": ["fpga"], "quantity": 0},
    ]
    assert result.to_dict()["vendors"] == []


def test_an_empty_cluster_is_an_empty_overview() -> None:
    result = inventory()
    data = result.to_dict()
    assert (data["total_gpu_count"], data["vendors"], data["nodes"], data["unsupported"]) == (0, [], [], [])
    assert data["summary"]["nodes"] == 0


# -- bad input -------------------------------------------------------------------------------------


def test_a_bad_device_count_names_the_file_the_object_and_the_field() -> None:
    with pytest.raises(ObjectInvalid) as caught:
        inventory(node("gpu-node-3", resources={"nvidia.com/gpu": "8"}, allocatable={"nvidia.com/gpu": "x"}))
    assert str(caught.value) == 'test.json: Node gpu-node-3: status.allocatable["nvidia.com/gpu"]: "x" is not a quantity'
    assert caught.value.code == "CLUSTER_OBJECT_INVALID"


def test_a_bad_count_only_in_allocatable_names_allocatable_not_capacity() -> None:
    bare = node("gpu-node-4")
    bare["status"] = {"allocatable": {"nvidia.com/gpu": "8Gi"}}
    with pytest.raises(ObjectInvalid) as caught:
        inventory(bare)
    assert str(caught.value) == ('test.json: Node gpu-node-4: status.allocatable["nvidia.com/gpu"]: "8Gi" '
                                 "is not a count (a binary suffix such as Gi belongs to sizes, not counts)")


def test_a_size_where_a_count_belongs_is_refused_in_a_pod() -> None:
    with pytest.raises(ObjectInvalid) as caught:
        inventory(node("n", resources={"nvidia.com/gpu": "8"}), pod("vllm-0", "n", containers=[container(limits={"nvidia.com/gpu": "8Gi"})]))
    assert str(caught.value) == ('test.json: Pod llm/vllm-0: spec.containers[0].resources.limits["nvidia.com/gpu"]: "8Gi" '
                                 "is not a count (a binary suffix such as Gi belongs to sizes, not counts)")


def test_a_bad_dra_capacity_names_the_slice_and_device() -> None:
    with pytest.raises(ObjectInvalid) as caught:
        inventory(node("n"), resource_slice("n-gpu", driver="gpu.intel.com", node_name="n",
                                            devices=[device("d0", attrs=attributes(type="gpu"), capacity={"memory": "lots"})]))
    assert str(caught.value) == 'test.json: ResourceSlice n-gpu: spec.devices[0].capacity["memory"].value: "lots" is not a quantity'


def test_a_slice_without_a_driver_is_refused() -> None:
    broken = resource_slice("s", driver="gpu.intel.com", node_name="n", devices=[])
    del broken["spec"]["driver"]
    with pytest.raises(ObjectInvalid, match=r"ResourceSlice s: spec.driver: null is not a DRA driver name"):
        inventory(node("n"), broken)


# -- objects without a node of this cluster --------------------------------------------------------


def test_devices_not_tied_to_a_node_count_in_their_bucket_with_a_note() -> None:
    shared = [device(f"d{i}", attrs=attributes(type="gpu", model="Max 1550"), capacity={"memory": "128Gi"}) for i in range(2)]
    result = inventory(node("n"), resource_slice("fabric", driver="gpu.intel.com", node_name=None, pool="fabric", devices=shared),
                       claim("c", results=[("gpu.intel.com", "fabric", "d1")], reserved_for=["p"]))
    xpu = bucket(result, "intel-xpu")
    assert (xpu["nodes"], xpu["devices"], xpu["allocated"], xpu["available"]) == (0, 2, 1, 1)
    assert xpu["vram"]["total_bytes"] == 2 * 128 * GIB
    assert "intel-xpu: 2 DRA device(s) published not tied to a single node" in result.notes
    assert result.total_gpu_count == 2


def test_pods_bound_to_a_node_missing_from_the_snapshot_are_reported() -> None:
    result = inventory(node("n", resources={"nvidia.com/gpu": "8"}), pod("lost", "ghost", limits={"nvidia.com/gpu": "2"}))
    assert hardware(result, "n", "nvidia")["allocated"] == 0
    assert "1 pod(s) on node 'ghost', which is not in the cluster, hold nvidia.com/gpu" in result.notes


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (lambda n, p, s: n["status"].__setitem__("capacity", ["nvidia.com/gpu"]),
         'Node n: status.capacity: ["nvidia.com/gpu"] is a JSON array, not an object'),
        (lambda n, p, s: n["metadata"].__setitem__("labels", "gpu=true"), 'Node n: metadata.labels: "gpu=true" is a JSON string, not an object'),
        (lambda n, p, s: p["spec"].__setitem__("containers", {"name": "main"}),
         'Pod llm/p: spec.containers: {"name": "main"} is a JSON object, not a list'),
        (lambda n, p, s: p["spec"]["containers"][0]["resources"].__setitem__("limits", 4),
         "Pod llm/p: spec.containers[0].resources.limits: 4 is a JSON number, not an object"),
        (lambda n, p, s: s["spec"].__setitem__("devices", "gpu-0"), 'ResourceSlice s: spec.devices: "gpu-0" is a JSON string, not a list'),
        (lambda n, p, s: s["spec"]["devices"][0].__setitem__("attributes", []),
         "ResourceSlice s: spec.devices[0].attributes: [] is a JSON array, not an object"),
    ],
)
def test_a_field_of_the_wrong_json_type_is_named_not_a_traceback(broken, message: str) -> None:  # type: ignore[no-untyped-def]
    n = node("n", resources={"nvidia.com/gpu": "8"})
    p = pod("p", "n", limits={"nvidia.com/gpu": "1"})
    s = resource_slice("s", driver="gpu.intel.com", node_name="n", devices=[device("d0", attrs=attributes(type="gpu"))])
    broken(n, p, s)
    with pytest.raises(ObjectInvalid) as caught:
        inventory(n, p, s)
    assert str(caught.value) == f"test.json: {message}"


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (lambda n, p, s, c: n["metadata"]["labels"].__setitem__("nvidia.com/gpu.count", 8),
         'Node n: metadata.labels["nvidia.com/gpu.count"]: 8 is a JSON number, not a string'),
        (lambda n, p, s, c: p["status"].__setitem__("phase", {"a": 1}), 'Pod llm/p: status.phase: {"a": 1} is a JSON object, not a string'),
        (lambda n, p, s, c: p["spec"].__setitem__("nodeName", ["n"]), 'Pod llm/p: spec.nodeName: ["n"] is a JSON array, not a string'),
        (lambda n, p, s, c: p["spec"]["containers"].__setitem__(0, None), "Pod llm/p: spec.containers[0]: null is a JSON null, not an object"),
        (lambda n, p, s, c: p["status"].__setitem__("extendedResourceClaimStatus", {"requestMappings": [{"resourceName": {}}]}),
         "Pod llm/p: status.extendedResourceClaimStatus.requestMappings[0].resourceName: {} is a JSON object, not a string"),
        (lambda n, p, s, c: s["spec"].__setitem__("nodeName", {}), "ResourceSlice s: spec.nodeName: {} is a JSON object, not a string"),
        (lambda n, p, s, c: s["spec"]["devices"][0].__setitem__("taints", [{"effect": []}]),
         "ResourceSlice s: spec.devices[0].taints[0].effect: [] is a JSON array, not a string"),
        (lambda n, p, s, c: c["status"].__setitem__("reservedFor", 5), "ResourceClaim llm/c: status.reservedFor: 5 is a JSON number, not a list"),
        (lambda n, p, s, c: c["status"]["reservedFor"][0].__setitem__("name", ["p"]),
         'ResourceClaim llm/c: status.reservedFor[0].name: ["p"] is a JSON array, not a string'),
        (lambda n, p, s, c: c["status"]["allocation"]["devices"]["results"][0].__setitem__("device", {}),
         "ResourceClaim llm/c: status.allocation.devices.results[0].device: {} is a JSON object, not a string"),
        (lambda n, p, s, c: c["status"]["allocation"]["devices"]["results"][0].__setitem__("pool", 1.5),
         "ResourceClaim llm/c: status.allocation.devices.results[0].pool: 1.5 is a JSON number, not a string"),
    ],
)
def test_a_name_or_label_of_the_wrong_json_type_is_named_not_a_traceback(broken, message: str) -> None:  # type: ignore[no-untyped-def]
    n = node("n", labels={"nvidia.com/gpu.present": "true"}, resources={"nvidia.com/gpu": "8"})
    p = pod("p", "n", limits={"nvidia.com/gpu": "1"})
    s = resource_slice("s", driver="gpu.intel.com", node_name="n", devices=[device("d0", attrs=attributes(type="gpu"))])
    c = claim("c", results=[("gpu.intel.com", "n", "d0")], reserved_for=["q"])
    broken(n, p, s, c)
    with pytest.raises(ObjectInvalid) as caught:
        inventory(n, p, s, c)
    assert str(caught.value) == f"test.json: {message}"


def test_a_namespace_of_the_wrong_json_type_is_named_not_a_traceback() -> None:
    p = pod("p", "n", limits={"nvidia.com/gpu": "1"})
    p["metadata"]["namespace"] = ["llm"]
    with pytest.raises(SnapshotInvalid) as caught:
        inventory(node("n", resources={"nvidia.com/gpu": "8"}), p)
    assert str(caught.value) == 'test.json: items[1] (Pod p): metadata.namespace: ["llm"] is a JSON array, not a string'
