"""NICs and shared devices in the inventory (issue 31), over objects shaped like the upstream operators'.

The fixtures are written here from the operators' documented shapes (no upstream file copied):

* the NVIDIA network operator's RDMA shared device plugin advertises each configured resource
  (``rdma/rdma_shared_device_a``) as a pool of handles (``rdmaHcaMax``, 63 by default, 1k here);
  its SR-IOV device plugin one unit per VF (``nvidia.com/sriov-rdma-vf``), host-device
  networks one per NIC (``nvidia.com/hostdev``);
* GKE multi-networking gives an A3 Ultra node one ``networking.gke.io.networks/rdma-N`` resource per
  RDMA NIC and its ``rdma-N.IP`` twin (the same NIC);
* dranet publishes one ResourceSlice device per interface with ``dra.net/ifName`` and ``dra.net/rdma``;
* the NVIDIA device plugin with a time-slicing or MPS config multiplies ``nvidia.com/gpu`` by the
  replicas (or renames it ``nvidia.com/gpu.shared``), and GPU feature discovery labels the node
  ``nvidia.com/gpu.replicas``, ``nvidia.com/gpu.sharing-strategy``, ``nvidia.com/gpu.count`` (physical)
  and ``nvidia.com/gpu.product`` with ``-SHARED``;
* a virtual-GPU scheduler declares device memory and compute as quantities
  (``nvidia.com/gpumem`` MiB, ``nvidia.com/gpucores`` percent).
"""

from __future__ import annotations

from llm_d_lens.cluster.render import overview_renderable
from llm_d_lens.testing.cluster import attributes, bucket, device, hardware, inventory, node, node_record, pod, resource_slice


def network(overview, node_name: str) -> dict[str, dict]:
    return {n["profile_id"]: n for n in node_record(overview, node_name)["network"]}


def gke_a3_ultra(name: str) -> dict:
    resources = {"nvidia.com/gpu": "8"}
    for i in range(8):
        resources[f"networking.gke.io.networks/rdma-{i}"] = "1"
        resources[f"networking.gke.io.networks/rdma-{i}.IP"] = "1"
    return node(name, labels={"cloud.google.com/gke-accelerator": "nvidia-h200-141gb", "nvidia.com/gpu.present": "true"},
                resources=resources)


def test_every_nic_is_counted_once_per_node_whatever_advertises_it() -> None:
    result = inventory(
        node("shared-rdma", labels={"nvidia.com/gpu.present": "true"},
             resources={"nvidia.com/gpu": "8", "rdma/rdma_shared_device_a": "1k", "rdma/rdma_shared_device_b": "1k"}),
        node("sriov", labels={"nvidia.com/gpu.present": "true"},
             resources={"nvidia.com/gpu": "8", "nvidia.com/sriov-rdma-vf": "8"}),
        node("hostdev", resources={"nvidia.com/gpu": "4", "nvidia.com/hostdev": "4"}, allocatable={"nvidia.com/hostdev": "3"}),
        gke_a3_ultra("a3-ultra"),
        node("dranet-node", resources={"nvidia.com/gpu": "8"}),
        resource_slice("dranet-node-dra.net-x1", driver="dra.net", node_name="dranet-node", devices=[
            *[device(f"eth{i}", attrs=attributes(**{"dra.net__ifName": f"ens{i}f0np0", "dra.net__rdma": True,
                                                    "resource.kubernetes.io__pciBusID": f"0000:{0x1b + i:02x}:00.0"}))
              for i in range(4)],
            device("eth-mgmt", attrs=attributes(**{"dra.net__ifName": "enp0s1", "dra.net__rdma": False})),
        ]),
        pod("pd-decode", "sriov", limits={"nvidia.com/gpu": "4", "nvidia.com/sriov-rdma-vf": "4"}),
    )
    # a shared device is one pool of handles per configured resource, not 2,000 NICs
    shared = network(result, "shared-rdma")["rdma-shared-device"]
    assert (shared["nics"], shared["handles"], shared["pairing"]) == (2, 2000, "shared")
    sriov = network(result, "sriov")["sriov-rdma-vf"]
    assert (sriov["nics"], sriov["handles"], sriov["allocated"], sriov["pairing"]) == (8, 8, 4, "per-device")
    hostdev = network(result, "hostdev")["rdma-host-device"]
    assert (hostdev["nics"], hostdev["handles"]) == (4, 3)  # capacity is the NICs, allocatable the units
    # rdma-0 and rdma-0.IP are one NIC: 8 NICs, not 16
    gke = network(result, "a3-ultra")["gke-rdma"]
    assert (gke["nics"], gke["handles"], len(gke["resources"])) == (8, 8, 16)
    # dranet: the four RDMA interfaces are NICs; the management interface is not
    dranet = network(result, "dranet-node")["dranet"]
    assert (dranet["nics"], dranet["other_devices"], dranet["via"]) == (4, 1, ["dra"])
    data = result.to_dict()
    assert data["unsupported"] == []  # none of them is "not claimed by any profile" any more
    totals = {n["profile_id"]: (n["nodes"], n["nics"]) for n in data["network"]}
    assert totals == {"rdma-shared-device": (1, 2), "sriov-rdma-vf": (1, 8), "rdma-host-device": (1, 4),
                      "gke-rdma": (1, 8), "dranet": (1, 4)}
    assert data["summary"]["nics"] == 2 + 8 + 4 + 8 + 4
    # NICs are never accelerators
    assert data["total_gpu_count"] == 8 + 8 + 4 + 8 + 8
    assert {n["benchmark_resource"] for n in data["network"]} >= {"rdma/rdma_shared_device_a", "mrdma.google.com", "dra.net"}


def test_time_slicing_replicas_are_shares_of_the_physical_gpus_never_extra_devices() -> None:
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-SHARED",
              "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing"}
    result = inventory(
        # not renamed: 8 GPUs x 4 replicas advertised as nvidia.com/gpu: 32, GFD's count label says 8
        node("ts-count", labels={**labels, "nvidia.com/gpu.count": "8"}, resources={"nvidia.com/gpu": "32"}),
        # the same without a count label: the replica label divides
        node("ts-replicas", labels=labels, resources={"nvidia.com/gpu": "32"}),
        # renameByDefault: the shares come as nvidia.com/gpu.shared
        node("ts-renamed", labels={**labels, "nvidia.com/gpu.count": "8"}, resources={"nvidia.com/gpu.shared": "32"}),
        # MPS: 2 replicas per GPU
        node("mps", labels={"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "4", "nvidia.com/gpu.replicas": "2",
                            "nvidia.com/gpu.sharing-strategy": "mps"}, resources={"nvidia.com/gpu": "8"}),
        node("whole", labels={"nvidia.com/gpu.present": "true", "nvidia.com/gpu.replicas": "1",
                              "nvidia.com/gpu.sharing-strategy": "none"}, resources={"nvidia.com/gpu": "8"}),
        pod("small-1", "ts-count", limits={"nvidia.com/gpu": "3"}),
    )
    for name in ("ts-count", "ts-replicas", "ts-renamed"):
        entry = hardware(result, name, "nvidia")
        assert (entry["devices"], entry["shares"]) == (8, 32), name
        assert entry["sharing"]["replicas"] == 4 and entry["sharing"]["strategy"] == "time-slicing"
    assert hardware(result, "ts-renamed", "nvidia")["sharing"]["resources"] == ["nvidia.com/gpu.shared"]
    held = hardware(result, "ts-count", "nvidia")
    assert (held["allocatable"], held["allocated"], held["available"]) == (32, 3, 29)  # shares are the schedulable units
    mps = hardware(result, "mps", "nvidia")
    assert (mps["devices"], mps["shares"], mps["sharing"]["strategy"]) == (4, 8, "mps")
    whole = hardware(result, "whole", "nvidia")
    assert (whole["devices"], whole["shares"], whole["sharing"]) == (8, 0, None)
    nvidia = bucket(result, "nvidia")
    assert (nvidia["devices"], nvidia["shares"], nvidia["shared_nodes"]) == (8 * 3 + 4 + 8, 32 * 3 + 8, 4)
    assert result.to_dict()["total_gpu_count"] == 8 * 3 + 4 + 8  # 104 shares would have been 104 "GPUs"


def test_fractional_resources_are_declared_quantities_not_devices() -> None:
    result = inventory(
        node("vgpu", labels={"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "4"},
             resources={"nvidia.com/gpu": "4", "nvidia.com/gpumem": "327680", "nvidia.com/gpucores": "400"}),
    )
    entry = hardware(result, "vgpu", "nvidia")
    assert entry["devices"] == 4  # not 327,684
    assert entry["fractional"] == {"nvidia.com/gpucores": {"capacity": 400, "allocatable": 400},
                                   "nvidia.com/gpumem": {"capacity": 327680, "allocatable": 327680}}
    assert [c["name"] for c in entry["channels"]] == ["nvidia.com/gpu"]
    assert bucket(result, "nvidia")["fractional"]["nvidia.com/gpumem"] == {"capacity": 327680, "allocatable": 327680}


def test_the_table_shows_network_devices_and_shares() -> None:
    from rich.console import Console

    result = inventory(
        node("ts", labels={"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "8", "nvidia.com/gpu.replicas": "4"},
             resources={"nvidia.com/gpu": "32", "nvidia.com/sriov-rdma-vf": "8"}),
    )
    console = Console(width=80, record=True)
    console.print(overview_renderable(result.to_dict(), with_nodes=False))
    text = console.export_text()
    assert "shared nvidia: 32 share(s) of 8 device(s) on 1 node(s)" in text
    assert "sriov-rdma-vf" in text and "per-device" in text
    assert max(len(line) for line in text.splitlines()) <= 80
