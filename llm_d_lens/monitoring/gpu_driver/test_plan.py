"""The device-stack plan: what is installed for which claims, what is refused, and that nothing is removed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_d_lens.monitoring.gpu_driver import service
from llm_d_lens.monitoring.gpu_driver.claims import Claim, RequestedClass, classes_from_cluster, parse_claims
from llm_d_lens.monitoring.gpu_driver.conftest import (
    assert_nothing_destructive,
    helm_release,
    kube_version,
    mutating_calls,
    shared_root,
)
from llm_d_lens.monitoring.gpu_driver.errors import ClaimsInvalid, DeviceClaimsRejected, KubernetesTooOld, UnsupportedDevices
from llm_d_lens.monitoring.gpu_driver.plan import build_plan


def cls(name: str, *claims: tuple[str, str] | tuple[str, str, int | None]) -> RequestedClass:
    return RequestedClass(name, [Claim(c[0], c[1], c[2] if len(c) > 2 else 1) for c in claims])  # type: ignore[arg-type]


def test_supported_claims_become_one_step_per_mode(registry: Any) -> None:
    plan = build_plan([
        cls("llama-h100", ("device_class", "gpu.nvidia.com", 4)),
        cls("mig-slices", ("device_class", "mig.nvidia.com")),
        cls("qwen-mi300", ("resource", "amd.com/gpu", 2)),
        cls("embed-cpu", ("device_class", "dra.cpu")),
        cls("tpu-serving", ("resource", "google.com/tpu", 8)),
    ], registry)
    steps = [(s.target.profile_id, s.target.mode_name, s.classes) for s in plan.steps]
    assert steps == [("nvidia", "dra", ["llama-h100", "mig-slices"]), ("amd", "plugin", ["qwen-mi300"]),
                     ("cpu", "dra", ["embed-cpu"])]
    assert [(p.hardware, p.mode, p.classes) for p in plan.provided] == [("google-tpu", "plugin", ["tpu-serving"])]


def test_hardware_ids_and_dra_drivers_resolve_to_modes(registry: Any) -> None:
    plan = build_plan([cls("a", ("hardware", "xpu:plugin")), cls("b", ("dra_driver", "gaudi.intel.com")),
                       cls("c", ("hardware", "cuda"))], registry)
    assert [(s.target.profile_id, s.target.mode_name) for s in plan.steps] == [
        ("intel-xpu", "plugin"), ("intel-gaudi", "dra"), ("nvidia", "plugin")]


def test_unsupported_refusal_names_every_offending_class_and_the_supported_set(registry: Any) -> None:
    with pytest.raises(UnsupportedDevices) as caught:
        build_plan([cls("ok", ("device_class", "gpu.nvidia.com")),
                    cls("eks-npu", ("device_class", "npu.rebellions.ai")),
                    cls("efa", ("resource", "vpc.amazonaws.com/efa"), ("resource", "nvidia.com/gpu")),
                    cls("typo", ("hardware", "nvidia:dra2"))], registry)
    message = caught.value.message
    for fragment in ("class eks-npu claims npu.rebellions.ai", "class efa claims vpc.amazonaws.com/efa",
                     "class typo claims nvidia:dra2", "no access mode 'dra2'"):
        assert fragment in message
    assert "class ok" not in message
    assert "gpu.amd.com" in message and "dra.cpu" in message and "nvidia.com/gpu" in message
    assert set(caught.value.details["classes"]) == {"eks-npu", "efa", "typo"}
    assert "gpu.nvidia.com" in caught.value.details["supported"]["device classes"]


def test_declared_external_names_are_not_refused(registry: Any) -> None:
    plan = build_plan([cls("rdma", ("device_class", "gpu.nvidia.com"), ("device_class", "dra.net"))], registry,
                      external=["dra.net"])
    assert [s.target.mode_name for s in plan.steps] == ["dra"] and plan.external == ["dra.net"]


def test_cpu_claim_beside_a_gpu_claim_in_one_class_is_rejected(registry: Any) -> None:
    with pytest.raises(DeviceClaimsRejected) as caught:
        build_plan([cls("mixed", ("device_class", "dra.cpu"), ("device_class", "gpu.nvidia.com")),
                    cls("mixed-plugin", ("resource", "amd.com/gpu"), ("dra_driver", "dra.cpu")),
                    cls("fine", ("device_class", "dra.cpu"))], registry)
    message = caught.value.message
    assert "class mixed claims dra.cpu alongside gpu.nvidia.com" in message
    assert "class mixed-plugin claims dra.cpu alongside amd.com/gpu" in message
    assert "fine" not in message


def test_cpu_claim_beside_an_external_network_claim_is_fine(registry: Any) -> None:
    plan = build_plan([cls("cpu-net", ("device_class", "dra.cpu"), ("device_class", "dra.net"))], registry, external=["dra.net"])
    assert [s.target.profile_id for s in plan.steps] == ["cpu"]


@pytest.mark.parametrize("count,shown", [(2, "2 devices"), (None, "all devices")])
def test_multi_device_cpu_request_is_rejected(registry: Any, count: int | None, shown: str) -> None:
    with pytest.raises(DeviceClaimsRejected) as caught:
        build_plan([cls("big-cpu", ("device_class", "dra.cpu", count))], registry)
    assert f"class big-cpu asks {shown} of dra.cpu" in caught.value.message and "at most 1" in caught.value.message


def test_multi_device_gpu_request_is_fine(registry: Any) -> None:
    assert build_plan([cls("x8", ("device_class", "gpu.intel.com", 8))], registry).steps[0].target.mode_name == "dra"


def test_two_modes_of_one_release_are_rejected(registry: Any) -> None:
    with pytest.raises(DeviceClaimsRejected) as caught:
        build_plan([cls("dra-user", ("device_class", "gpu.amd.com")), cls("plugin-user", ("resource", "amd.com/gpu"))], registry)
    assert "release amd-gpu-operator in namespace kube-amd-gpu" in caught.value.message


def test_unsupported_refusal_also_carries_the_other_problems(registry: Any) -> None:
    with pytest.raises(UnsupportedDevices) as caught:
        build_plan([cls("a", ("device_class", "x.example.com")), cls("b", ("device_class", "dra.cpu", 4))], registry)
    assert any("class b asks 4 devices" in p for p in caught.value.details["also_rejected"])


def script_cluster(fake: Any, releases: list[dict[str, Any]], server: str = "v1.36.0") -> None:
    fake.reply(["kubectl", "version", "-o", "json"], json_body=kube_version(server))
    fake.reply(["helm", "list", "--all-namespaces", "--all", "-o", "json"], json_body=releases)
    fake.reply(["helm", "list", "--namespace", ...], json_body=[])
    fake.reply(["kubectl", "get", "runtimeclasses.node.k8s.io", "-o", "json"], json_body={"kind": "List", "items": []})
    fake.reply(["helm", "upgrade", "--install", ...], stdout="")


async def test_installed_but_unneeded_drivers_are_reported_and_kept(registry: Any, fake: Any, view: Any) -> None:
    script_cluster(fake, [helm_release("nvidia-device-plugin", "nvidia-device-plugin", "nvidia-device-plugin-0.18.2"),
                          helm_release("kube-prometheus", "monitoring", "kube-prometheus-stack-75.0.0")])
    classes = [cls("cpu", ("device_class", "dra.cpu"))]
    plan = await service.plan(registry, classes, [], view)
    assert [(n["hardware"], n["mode"], n["release"]) for n in plan.not_needed] == [("nvidia", "plugin", "nvidia-device-plugin")]
    results = await service.install_plan(registry, plan, view, dry_run=False)
    assert [r.target.profile_id for r in results] == ["cpu"]
    assert [a[3] for a in mutating_calls(fake)] == ["dra-driver-cpu"]
    assert_nothing_destructive(fake)


async def test_no_plan_or_refusal_ever_issues_a_delete(registry: Any, fake: Any, view: Any) -> None:
    script_cluster(fake, [helm_release("amd-gpu-operator", "kube-amd-gpu", "gpu-operator-charts-v1.4.0"),
                          helm_release("intel-gpu-resource-driver", "intel-gpu-resource-driver", "intel-gpu-resource-driver-chart-0.9.1")])
    plan = await service.plan(registry, [cls("h100", ("resource", "nvidia.com/gpu")), cls("mi", ("device_class", "gpu.amd.com"))], [], view)
    await service.install_plan(registry, plan, view, dry_run=False)
    refusals = [
        [cls("a", ("device_class", "nope.example.com"))],
        [cls("b", ("device_class", "dra.cpu"), ("device_class", "gpu.nvidia.com"))],
        [cls("c", ("device_class", "dra.cpu", 3))],
        [cls("d", ("device_class", "gpu.amd.com")), cls("e", ("resource", "amd.com/gpu"))],
    ]
    calls_before = len(fake.calls)
    for classes in refusals:
        with pytest.raises((UnsupportedDevices, DeviceClaimsRejected)):
            await service.plan(registry, classes, [], view)
    assert len(fake.calls) == calls_before  # refusals come before any cluster call
    assert [s.action for s in plan.steps] == ["install", "install"]
    assert [n["release"] for n in plan.not_needed] == ["intel-gpu-resource-driver"]
    assert_nothing_destructive(fake)
    assert all(a[:2] in (["helm", "upgrade"], ["helm", "list"], ["helm", "get"], ["kubectl", "version"], ["kubectl", "get"])
               for a in fake.argvs())


async def test_a_too_old_cluster_refuses_the_plan_before_installing(registry: Any, fake: Any, view: Any) -> None:
    script_cluster(fake, [], server="v1.35.1")
    with pytest.raises(KubernetesTooOld) as caught:
        await service.plan(registry, [cls("cpu", ("device_class", "dra.cpu"))], [], view)
    assert "1.36.0" in caught.value.message
    assert mutating_calls(fake) == []


async def test_dry_run_plan_install_runs_nothing(registry: Any, fake: Any, view: Any) -> None:
    plan = await service.plan(registry, [cls("x", ("device_class", "gpu.intel.com"))], [], None)
    results = await service.install_plan(registry, plan, view, dry_run=True)
    assert [r.action for r in results] == ["dry-run"] and fake.calls == []


def test_claims_file_shape_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "claims.yaml"
    path.write_text("external: [dra.net]\nclasses:\n  - name: a\n    claims:\n      - device_class: dra.cpu\n        count: 1\n"
                    "      - resource: nvidia.com/gpu\n        count: All\n")
    classes, external = service.read_claims_file(path)
    assert external == ["dra.net"]
    assert [(c.kind, c.key, c.count) for c in classes[0].claims] == [("device_class", "dra.cpu", 1), ("resource", "nvidia.com/gpu", None)]
    with pytest.raises(ClaimsInvalid) as caught:
        parse_claims({"classes": [{"name": "a", "claims": [{"device_class": "x", "resource": "y"}]}]}, "claims.yaml")
    assert "claims.yaml" in caught.value.message and "$.classes.0.claims.0" in caught.value.message
    with pytest.raises(ClaimsInvalid):
        parse_claims({"classes": [{"name": "a", "claims": [{"device_class": "x", "count": 0}]}]}, "claims.yaml")


POD_TEMPLATE = {"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Running"}}


async def test_claims_from_workloads_group_pods_by_owner(registry: Any, fake: Any, view: Any) -> None:
    pods = [
        {**POD_TEMPLATE, "metadata": {"name": "vllm-7d9f8c6b5-abcde", "namespace": "llm",
                                      "ownerReferences": [{"kind": "ReplicaSet", "name": "vllm-7d9f8c6b5", "controller": True}]},
         "spec": {"containers": [{"name": "vllm", "resources": {"limits": {"nvidia.com/gpu": "2", "cpu": "8",
                                                                          "memory": "64Gi", "hugepages-2Mi": "1Gi"}}}]}},
        {**POD_TEMPLATE, "metadata": {"name": "vllm-7d9f8c6b5-fghij", "namespace": "llm",
                                      "ownerReferences": [{"kind": "ReplicaSet", "name": "vllm-7d9f8c6b5", "controller": True}]},
         "spec": {"containers": [{"name": "vllm", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}},
        {**POD_TEMPLATE, "metadata": {"name": "done", "namespace": "llm"}, "status": {"phase": "Succeeded"},
         "spec": {"containers": [{"name": "x", "resources": {"limits": {"example.com/thing": "1"}}}]}},
        {**POD_TEMPLATE, "metadata": {"name": "xpu-0", "namespace": "llm",
                                      "ownerReferences": [{"kind": "StatefulSet", "name": "xpu", "controller": True}]},
         "spec": {"containers": [{"name": "vllm"}], "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "xpu-x4"}]}},
    ]
    templates = [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                  "metadata": {"name": "xpu-x4", "namespace": "llm"},
                  "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.intel.com",
                                                                                         "allocationMode": "ExactCount", "count": 4}}]}}}}]
    fake.reply(["kubectl", "get", "pods", "--all-namespaces", "-o", "json"], json_body={"kind": "List", "items": pods})
    fake.reply(["kubectl", "get", "resourceclaimtemplates.resource.k8s.io", ...], json_body={"kind": "List", "items": templates})
    fake.reply(["kubectl", "get", "resourceclaims.resource.k8s.io", ...], returncode=1,
               stderr='error: the server doesn\'t have a resource type "resourceclaims"\n')
    classes = await classes_from_cluster(view)
    assert [(c.name, [(x.kind, x.key, x.count) for x in c.claims]) for c in classes] == [
        ("llm/vllm", [("resource", "nvidia.com/gpu", 2)]),
        ("llm/xpu", [("device_class", "gpu.intel.com", 4)]),
    ]


@pytest.mark.skipif(shared_root() is None, reason="../shared (or $LENS_SHARED_ROOT) is not present")
async def test_conformance_plan_from_the_dra_snapshot(registry: Any, fake: Any, view: Any) -> None:
    snapshot = json.loads((shared_root() / "clusters" / "dra-intel-cpu.json").read_text())  # type: ignore[operator]
    by_kind: dict[str, list[Any]] = {}
    for item in snapshot["items"]:
        by_kind.setdefault(item["kind"], []).append(item)
    fake.reply(["kubectl", "get", "pods", "--all-namespaces", "-o", "json"], json_body={"kind": "List", "items": by_kind["Pod"]})
    fake.reply(["kubectl", "get", "resourceclaimtemplates.resource.k8s.io", ...], json_body={"kind": "List", "items": []})
    fake.reply(["kubectl", "get", "resourceclaims.resource.k8s.io", ...],
               json_body={"kind": "List", "items": by_kind["ResourceClaim"]})
    classes = await classes_from_cluster(view)
    # Six workloads claim devices; the generated claims stand in for the templates the snapshot lacks.
    assert {c.name: [(x.key, x.count) for x in c.claims] for c in classes} == {
        "inference/text-embeddings": [("dra.cpu", 1)],
        "inference/vllm-cpu-qwen2-5-1-5b": [("dra.cpu", 1)],
        "inference/vllm-xpu-llama-3-1-405b": [("gpu.intel.com", 8)],
        "inference/vllm-xpu-llama-3-1-70b": [("gpu.intel.com", 4)],
        "inference/vllm-xpu-llama-3-1-8b": [("gpu.intel.com", 1)],
        "inference/vllm-xpu-qwen2-5-32b": [("gpu.intel.com", 2)],
    }
    plan = build_plan(classes, registry)
    assert [(s.target.profile_id, s.target.mode_name, len(s.classes)) for s in plan.steps] == [("cpu", "dra", 2), ("intel-xpu", "dra", 4)]


def test_two_classes_with_one_name_both_count(registry: Any) -> None:
    """A Deployment and a StatefulSet may share a name; keyed by name, the second hid the first's claims."""
    plan = build_plan([cls("llm/web", ("device_class", "gpu.nvidia.com")), cls("llm/web", ("resource", "amd.com/gpu"))],
                      registry)
    assert [(s.target.profile_id, s.target.mode_name, s.classes) for s in plan.steps] == [
        ("nvidia", "dra", ["llm/web"]), ("amd", "plugin", ["llm/web (2)"])]
    with pytest.raises(UnsupportedDevices) as caught:
        build_plan([cls("a", ("device_class", "npu.example.com")), cls("a", ("device_class", "gpu.nvidia.com"))], registry)
    assert caught.value.message.startswith("class a claims npu.example.com (device class)")


def test_a_claims_file_may_not_name_two_classes_alike(tmp_path: Path) -> None:
    data = {"classes": [{"name": "a", "claims": [{"device_class": "gpu.nvidia.com"}]},
                        {"name": "a", "claims": [{"resource": "amd.com/gpu"}]}]}
    with pytest.raises(ClaimsInvalid) as caught:
        parse_claims(data, "claims.yaml")
    assert caught.value.message == "claims.yaml: $.classes[1].name: 'a' is already the name of $.classes[0]"


@pytest.mark.parametrize("argv", [["--dra-driver", ""], ["--device-class", "  "], ["--hardware", "nvidia:"]])
def test_an_empty_flag_value_is_refused_naming_the_flag(argv: list[str], capsys: Any) -> None:
    """As in a claims file: an empty value claims nothing and made a class with no name ('class  claims  ...')."""
    from llm_d_lens.cli.app import main

    assert main(["driver", "plan", "--offline", *argv]) == 1
    assert capsys.readouterr().err == f"error: CLAIMS_INVALID: {argv[0]} {argv[1]!r}: give a non-empty value\n"
