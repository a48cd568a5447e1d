"""The reader of Kubernetes objects the joins use: shapes, errors that point at the field, kubectl."""

from __future__ import annotations

import pytest

from llm_d_lens.monitoring.accelerator.k8s import ClusterObjects, load, read_from_kubectl
from llm_d_lens.monitoring.errors import ClusterObjectsInvalid
from llm_d_lens.testing.telemetry_pages import claim_object, node_object, pod_object, shared, slice_object
from llm_d_lens.runner import CommandFailed
from llm_d_lens.testing.fake_runner import FakeRunner


def test_the_shared_dra_snapshot_is_read():
    objects = ClusterObjects.from_files([shared("clusters", "dra-intel-cpu.json")])
    pod = objects.pod("inference", "vllm-xpu-qwen2-5-32b-59d7f8c6b4-k7wqz")
    assert pod.node == "xpu-max1550-01" and pod.active
    assert pod.claim_names == {"gpu": "vllm-xpu-qwen2-5-32b-59d7f8c6b4-k7wqz-gpu-hfr6l"}
    assert pod.container_for_claim("gpu") == "vllm"
    assert [(s.name, s.resource_ids) for s in pod.allocated] == [
        ("claim:gpu/gpus", ("intel.com/gpu=0000-9a-00-0-0x0bd5", "intel.com/gpu=0000-ab-00-0-0x0bd5"))]
    pending = objects.pod("inference", "vllm-xpu-llama-3-1-405b-0")
    assert not pending.active  # not bound to a node
    device = objects.devices[("gpu.intel.com", "xpu-max1550-01", "0000-5c-00-0-0x0bd5")]
    # bare attribute names belong to the driver's domain; qualified ones keep theirs
    assert device.attributes["gpu.intel.com/health"] == "Unhealthy"
    assert device.attributes["resource.kubernetes.io/pciBusID"] == "0000:5c:00.0"
    assert objects.devices[("dra.cpu", "cpu-spr-01", "cpudevnuma000")].attributes["dra.cpu/smtEnabled"] == "true"


def test_a_list_an_array_and_a_single_object_are_all_accepted():
    pod, node = pod_object("a-0", "n1"), node_object("n1", "10.0.0.1")
    from_list = ClusterObjects.from_documents([("x", {"kind": "List", "items": [pod, node]})])
    from_array = ClusterObjects.from_documents([("x", [pod, node])])
    from_objects = ClusterObjects.from_documents([("x", pod), ("y", node)])
    for objects in (from_list, from_array, from_objects):
        assert [p.name for p in objects.pods] == ["a-0"] and objects.node_name("10.0.0.1") == "n1"


def test_only_the_newest_generation_of_a_pool_counts():
    old = slice_object("n1", "gpu.example.com", {"gpu-0": {"uuid": "OLD"}}, generation=1)
    new = slice_object("n1", "gpu.example.com", {"gpu-0": {"uuid": "NEW"}}, generation=2)
    objects = ClusterObjects.from_documents([("x", [new, old])])
    assert objects.devices[("gpu.example.com", "n1", "gpu-0")].attributes["gpu.example.com/uuid"] == "NEW"


def test_finished_pods_hold_nothing():
    objects = ClusterObjects.from_documents([("x", [pod_object("done-0", "n1", phase="Succeeded")])])
    assert not objects.pods[0].active


def test_claims_keep_results_consumers_and_classes():
    claim = claim_object("c", [("gpu.example.com", "n1", "gpu-0")], ["p-0"], device_class="gpu.example.com")
    (read,) = ClusterObjects.from_documents([("x", [claim])]).claims
    assert (read.consumers, read.device_classes, read.results[0].device) == (("p-0",), ("gpu.example.com",), "gpu-0")


@pytest.mark.parametrize(
    "document, where, message",
    [
        ({"kind": "Pod", "metadata": {"name": "a", "namespace": "ns"}, "spec": {"containers": {"name": "x"}}},
         "$ (Pod ns/a) .spec.containers", "has type dict, expected list"),
        ({"kind": "Pod", "metadata": {"name": "a", "namespace": "ns"}, "spec": {"nodeName": 7}},
         "$ (Pod ns/a) .spec.nodeName", "has type int, expected str"),
        ({"kind": "List", "items": ["oops"]}, "$.items[0]", "is not an object"),
        ({"metadata": {}}, "$", "expected a Kubernetes object"),
    ],
)
def test_a_wrong_shape_names_the_source_object_and_field(document, where, message):
    with pytest.raises(ClusterObjectsInvalid) as caught:
        ClusterObjects.from_documents([("cluster.json", document)])
    assert caught.value.message.startswith(f"cluster.json: {where}: {message}")
    assert caught.value.code == "CLUSTER_OBJECTS_INVALID"


def test_a_file_that_is_not_json_names_the_position(tmp_path):
    path = tmp_path / "cluster.json"
    path.write_text('{"kind": "List", "items": [}')
    with pytest.raises(ClusterObjectsInvalid, match=r"cluster.json: \$: not valid JSON: .* line 1 column 28"):
        load([str(path)])


def test_objects_come_from_kubectl_through_the_runner():
    runner = FakeRunner()
    runner.reply(["kubectl", "get", "pods,nodes", ...], json_body={"kind": "List", "items": [pod_object("a-0", "n1")]})
    runner.reply(["kubectl", "get", "resourceclaims.resource.k8s.io,resourceslices.resource.k8s.io", ...],
                 json_body={"kind": "List", "items": [slice_object("n1", "gpu.example.com", {"gpu-0": {"uuid": "U"}})]})
    objects = load(["kubectl"], runner)
    assert [p.name for p in objects.pods] == ["a-0"] and len(objects.devices) == 1
    assert runner.argvs()[0] == ["kubectl", "get", "pods,nodes", "--all-namespaces", "-o", "json"]


def test_a_cluster_without_dra_is_read_without_claims():
    runner = FakeRunner()
    runner.reply(["kubectl", "get", "pods,nodes", ...], json_body={"kind": "List", "items": []})
    runner.reply(["kubectl", "get", "resourceclaims.resource.k8s.io,resourceslices.resource.k8s.io", ...], returncode=1,
                 stderr='error: the server doesn\'t have a resource type "resourceclaims"')
    assert read_from_kubectl(runner).claims == []


def test_another_kubectl_failure_is_reported():
    runner = FakeRunner()
    runner.reply(["kubectl", "get", "pods,nodes", ...], json_body={"kind": "List", "items": []})
    runner.reply(["kubectl", "get", "resourceclaims.resource.k8s.io,resourceslices.resource.k8s.io", ...], returncode=1,
                 stderr="error: You must be logged in to the server (Unauthorized)")
    with pytest.raises(CommandFailed, match="Unauthorized"):
        read_from_kubectl(runner)


def test_no_sources_means_no_objects():
    assert load([]) is None



@pytest.mark.parametrize("items, shown", [("x", '"x"'), ({"kind": "Pod"}, '{"kind": "Pod"}')])
def test_a_list_whose_items_are_not_a_list_is_refused_not_read_as_empty(items, shown):
    """Read as nothing, it would turn every device 'idle' instead of naming the broken file."""
    with pytest.raises(ClusterObjectsInvalid) as caught:
        ClusterObjects.from_documents([("cluster.json", {"kind": "List", "items": items})])
    assert caught.value.message == f"cluster.json: $.items: is not a list (value: {shown})"


def test_a_list_with_null_items_is_empty():
    """Go writes an empty slice as null; such a List holds no objects."""
    read = ClusterObjects.from_documents([("cluster.json", {"kind": "List", "items": None})])
    assert (read.pods, read.nodes) == ([], [])
