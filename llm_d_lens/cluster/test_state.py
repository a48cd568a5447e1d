"""The inventory state: objects applied one by one give exactly the overview of one read of the final objects.

The property test applies random sequences of adds, changes and deletes of every kind (nodes of
several profiles, bound, unbound and finished pods, pools of DRA slices of two generations,
allocated and pending claims, device classes, a node that cannot be read; NICs through the RDMA
shared device plugin, SR-IOV VFs, GKE's twin names and dranet slices; time-slicing and MPS replicas;
HAMi's fractional resources) and compares, after
every step, the state's overview with :func:`build_inventory` of the objects as they then are.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_d_lens.cluster.catalog import Catalog
from llm_d_lens.cluster.errors import ObjectInvalid
from llm_d_lens.cluster.inventory import build_inventory
from llm_d_lens.cluster.model import dumps
from llm_d_lens.cluster.objects import ClusterObjects
from llm_d_lens.cluster.state import CLAIM, CLASS, NODE, POD, SLICE, InventoryState, key_of
from llm_d_lens.testing.cluster import attributes, claim, device, device_class, node, pod, resource_slice

Obj = dict[str, Any]
NODES = ["n0", "n1", "n2", "n3"]
PLACES = [*NODES, "ghost", None]  # a node the cluster does not hold, and none (unbound, or a slice for all nodes)
NV_LABELS = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
AMD_LABELS = {"feature.node.kubernetes.io/amd-gpu": "true", "amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM"}
SHARED_LABELS = {**NV_LABELS, "nvidia.com/gpu.count": "8", "nvidia.com/gpu.replicas": "4",
                 "nvidia.com/gpu.sharing-strategy": "time-slicing"}
MPS_LABELS = {**NV_LABELS, "nvidia.com/gpu.replicas": "2", "nvidia.com/gpu.sharing-strategy": "mps"}
DRIVERS = ["gpu.nvidia.com", "dra.cpu", "unknown.example.com", "dra.net"]
GKE_RDMA = {f"networking.gke.io.networks/rdma-{i}{twin}": "1" for i in range(2) for twin in ("", ".IP")}

nodes = st.builds(
    lambda name, labels, resources, ready, cordoned: node(name, labels=labels, resources=resources, ready=ready,
                                                          unschedulable=cordoned),
    st.sampled_from(NODES),
    st.sampled_from([{}, NV_LABELS, AMD_LABELS, {**NV_LABELS, "nvidia.com/gpu.count": "8"}, SHARED_LABELS,
                     MPS_LABELS]),
    st.sampled_from([{}, {"nvidia.com/gpu": "8"}, {"amd.com/gpu": "4"}, {"example.com/fpga": "2"},
                     {"nvidia.com/gpu": "32"}, {"nvidia.com/gpu.shared": "16"},
                     {"nvidia.com/gpu": "4", "nvidia.com/gpumem": "327680", "nvidia.com/gpucores": "400"},
                     {"nvidia.com/gpu": "8", "rdma/rdma_shared_device_a": "1k", "rdma/rdma_shared_device_b": "1k"},
                     {"nvidia.com/gpu": "8", "nvidia.com/sriov-rdma-vf": "8"}, {"nvidia.com/gpu": "8", **GKE_RDMA},
                     {"nvidia.com/gpu": "lots"}]),  # the last one cannot be read: the node is left out
    st.sampled_from([True, False, None]), st.booleans())
pods = st.builds(
    lambda name, where, limits, phase, claims: pod(name, where, limits=limits, phase=phase,
                                                   claims=[{"name": "gpu", "resourceClaimName": "c0"}] if claims else None),
    st.sampled_from(["p0", "p1", "p2", "p3", "p4"]), st.sampled_from([*NODES, "ghost", None]),
    st.sampled_from([{}, {"nvidia.com/gpu": 2}, {"nvidia.com/gpu": 8}, {"amd.com/gpu": 1}, {"example.com/fpga": 1},
                     {"nvidia.com/gpu": 4, "nvidia.com/sriov-rdma-vf": 4}, {"rdma/rdma_shared_device_a": 1},
                     {"nvidia.com/gpu.shared": 2}, {"nvidia.com/gpumem": 1024}]),
    st.sampled_from(["Running", "Pending", "Succeeded"]), st.booleans())
slices = st.builds(
    lambda name, driver, where, count, generation, pool: resource_slice(
        name, driver=driver, node_name=where, pool=pool, generation=generation,
        devices=[device(f"gpu-{i}", attrs=attributes(type="gpu"), capacity={"memory": "80Gi"}) for i in range(count)]
        if driver != "dra.net" else  # dranet: RDMA interfaces are NICs, a management interface is not
        [device(f"eth{i}", attrs=attributes(**{"dra.net__ifName": f"ens{i}", "dra.net__rdma": i != 2}))
         for i in range(count)]),
    st.sampled_from(["s0", "s1", "s2"]), st.sampled_from(DRIVERS), st.sampled_from(PLACES),
    st.integers(0, 3), st.integers(1, 2), st.sampled_from(["pool-a", "pool-b"]))
claims = st.builds(
    lambda name, result, pods: claim(name, results=[result] if result else None, reserved_for=pods),
    st.sampled_from(["c0", "c1", "c2"]),
    st.one_of(st.none(), st.tuples(st.sampled_from(DRIVERS), st.sampled_from(["pool-a", "pool-b"]),
                                   st.sampled_from(["gpu-0", "gpu-1", "gpu-5"]))),
    st.sampled_from([[], ["p0"], ["p1", "p2"]]))
classes = st.builds(lambda name, driver, resource: device_class(name, driver=driver, extended_resource=resource),
                    st.sampled_from(["gpu.nvidia.com", "fpga.example.com"]), st.sampled_from([None, *DRIVERS]),
                    st.sampled_from([None, "example.com/fpga", "nvidia.com/gpu"]))
KIND_OF = {NODE: nodes, POD: pods, SLICE: slices, CLAIM: claims, CLASS: classes}
events = st.lists(st.one_of(
    st.tuples(st.just("put"), st.sampled_from(list(KIND_OF))).flatmap(lambda e: st.tuples(st.just(e[0]), st.just(e[1]),
                                                                                          KIND_OF[e[1]])),
    st.tuples(st.just("delete"), st.sampled_from(list(KIND_OF)), st.sampled_from(["n0", "n1", "p0", "p1", "s0", "s1",
                                                                                   "c0", "gpu.nvidia.com"]))),
    min_size=8, max_size=40)
ATTRS = {NODE: "nodes", POD: "pods", SLICE: "resource_slices", CLASS: "device_classes", CLAIM: "resource_claims"}


def rebuilt(truth: dict[str, dict[Any, Obj]], catalog: Catalog) -> dict[str, Any]:
    """One read of the objects as they are now."""
    objects = ClusterObjects(dra_api=True)
    for kind, attr in ATTRS.items():
        setattr(objects, attr, [copy.deepcopy(item) for item in truth[kind].values()])
    return build_inventory(objects, catalog, source={"kind": "test"}).to_dict()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events)
def test_objects_applied_one_by_one_give_the_overview_of_one_read_of_the_final_objects(steps: list[Any]) -> None:
    catalog = Catalog()
    state = InventoryState(catalog, {"kind": "test"}, dra_api=True)
    truth: dict[str, dict[Any, Obj]] = {kind: {} for kind in ATTRS}
    for step, (action, kind, what) in enumerate(steps):
        if step == len(steps) // 2:
            state.keep_encoded()  # a server starts keeping the records' bytes when an answer asks for nodes
        if action == "put":
            item = copy.deepcopy(what)
            key = key_of(item)
            try:
                state.put(kind, item)
                truth[kind][key] = what
            except ObjectInvalid:
                truth[kind].pop(key, None)  # left out, as a watch leaves it out
        else:
            namespace = "llm" if kind in (POD, CLAIM) else ""
            assert state.remove(kind, (namespace, what)) == (truth[kind].pop((namespace, what), None) is not None)
        found = state.overview()
        assert found.to_dict() == rebuilt(truth, catalog), (action, kind, what)
        if step >= len(steps) // 2:  # the kept bytes are the records', in the records' order, none stale
            assert found.node_json == [dumps(record.to_dict()) for record in found.nodes]
            assert found.node_digests == [hashlib.blake2b(part, digest_size=8).digest() for part in found.node_json]
        else:
            assert found.node_json is None and found.node_digests is None


def test_a_state_keeps_parts_not_objects_and_counts_again_only_what_changed() -> None:
    catalog = Catalog()
    state = InventoryState(catalog, dra_api=False)
    for name in NODES:
        state.put(NODE, node(name, labels=NV_LABELS, resources={"nvidia.com/gpu": "8"}))
    state.put(POD, pod("p0", "n0", limits={"nvidia.com/gpu": 4}))
    first = state.overview()
    assert not isinstance(state.pods[("llm", "p0")], dict) and not isinstance(state.nodes[("", "n0")], dict)
    state.put(POD, pod("p0", "n1", limits={"nvidia.com/gpu": 2}))
    second = state.overview()
    # the nodes the pod left and joined are new records; the others are the very same ones
    same = [a is b for a, b in zip(first.nodes, second.nodes)]
    assert same == [False, False, True, True]
    assert second.buckets[0].counts.allocated == 2 and first.buckets[0].counts.allocated == 4


def test_a_dra_object_the_inventory_cannot_read_raises_when_counted_and_can_be_removed() -> None:
    state = InventoryState(Catalog(), dra_api=True)
    bad = resource_slice("s0", driver="gpu.nvidia.com", node_name="n0", devices=[device("gpu-0")])
    bad["spec"]["pool"]["generation"] = "two"
    state.put(SLICE, bad)
    try:
        state.overview()
        raise AssertionError("an unreadable slice was counted")
    except ObjectInvalid as exc:
        assert exc.item is bad and exc.path == "spec.pool.generation"
    assert state.remove(SLICE, ("", "s0"))
    assert state.overview().object_counts[SLICE] == 0


def test_a_changed_dranet_slice_counts_its_node_nics_again() -> None:
    catalog = Catalog()
    state = InventoryState(catalog, {"kind": "test"}, dra_api=True)
    truth: dict[str, dict[Any, Obj]] = {kind: {} for kind in ATTRS}
    gpu_node = node("n0", resources={"nvidia.com/gpu": "8", "rdma/rdma_shared_device_a": "1k"})
    steps = [(NODE, gpu_node)] + [
        (SLICE, resource_slice("s0", driver="dra.net", node_name="n0", pool="pool-a", generation=generation,
                               devices=[device(f"eth{i}", attrs=attributes(**{"dra.net__rdma": i != 3}))
                                        for i in range(count)]))
        for generation, count in ((1, 2), (2, 4), (3, 1))]
    seen = []
    for kind, item in steps:
        state.put(kind, copy.deepcopy(item))
        truth[kind][key_of(item)] = item
        answer = state.overview().to_dict()
        assert answer == rebuilt(truth, catalog)
        seen.append({n["profile_id"]: n["nics"] for n in answer["nodes"][0]["network"]})
    assert seen == [{"rdma-shared-device": 1}, {"dranet": 2, "rdma-shared-device": 1},
                    {"dranet": 3, "rdma-shared-device": 1}, {"dranet": 1, "rdma-shared-device": 1}]
