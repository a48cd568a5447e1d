"""The shared Kubernetes object readers: Lists and single objects, metadata, resources, counts."""

from __future__ import annotations

import pytest

from llm_d_lens.k8s.objects import get_path, is_extended_resource, items, labels_of, name_of, namespace_of, whole_quantity

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-01", "labels": {"zone": "a", "gpus": 8}}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "vllm-0", "namespace": "serve"}}


def test_a_list_gives_its_object_items_and_a_single_object_itself():
    listed = {"apiVersion": "v1", "kind": "List", "items": [NODE, "not an object", POD]}
    assert items(listed) == [NODE, POD]
    assert items(POD) == [POD]
    assert items({"items": "not a list", "kind": "NodeList"}) == [{"items": "not a list", "kind": "NodeList"}]
    assert items([NODE]) == [] and items(None) == [] and items({"metadata": {}}) == []


def test_metadata_reads_as_strings_and_missing_as_empty():
    assert labels_of(NODE) == {"zone": "a", "gpus": "8"}
    assert (name_of(NODE), namespace_of(NODE)) == ("gpu-node-01", "")
    assert (name_of(POD), namespace_of(POD)) == ("vllm-0", "serve")
    odd = {"kind": "Pod", "metadata": ["not", "a", "mapping"]}
    assert (labels_of(odd), name_of(odd), namespace_of(odd)) == ({}, "", "")


def test_a_path_stops_at_the_first_missing_or_non_mapping_step():
    assert get_path(POD, "metadata", "namespace") == "serve"
    assert get_path(POD, "spec", "containers") is None
    assert get_path(POD, "kind", "x") is None
    assert get_path(POD) is POD


@pytest.mark.parametrize(
    "name, extended",
    [("example.com/gpu", True), ("rdma/ib", True), ("cpu", False), ("memory", False), ("hugepages-2Mi", False),
     ("ephemeral-storage", False), ("kubernetes.io/batch", False), ("requests.kubernetes.io/x", False), ("/x", False)],
)
def test_extended_resources_are_domain_prefixed_outside_kubernetes_io(name, extended):
    assert is_extended_resource(name) is extended


@pytest.mark.parametrize("value, count", [(2, 2), ("4", 4), (" 8 ", 8), ("1Gi", None), ("1.5", None), (True, None), (None, None)])
def test_whole_quantities(value, count):
    assert whole_quantity(value) == count
