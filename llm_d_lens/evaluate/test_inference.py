"""Inferring the benchmark configuration from a rendered manifest Lens did not render.

Unit cases use small hand-written objects; the conformance case renders the real upstream llm-d
overlays in ../shared with the real ``kubectl kustomize`` and checks each against the variant facts
(labels, request shape and counts) recorded for that llm-d revision.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_d_lens.evaluate.config import build_config
from llm_d_lens.evaluate.errors import HardwareNotInferred, ManifestInvalid
from llm_d_lens.evaluate.inference import infer, parse_manifest

VARIANT, VENDOR = "llm-d.ai/accelerator-variant", "llm-d.ai/accelerator-vendor"


def deployment(name: str, labels: dict[str, str] | None = None, resources: dict[str, Any] | None = None,
               claims: list[dict[str, str]] | None = None, replicas: int = 1, kind: str = "Deployment") -> dict[str, Any]:
    pod_spec: dict[str, Any] = {"containers": [{"name": "vllm", "resources": {"limits": {"cpu": "8", "memory": "24Gi",
                                                                                       **(resources or {})}}}]}
    if claims:
        pod_spec["resourceClaims"] = claims
    template = {"metadata": {"labels": dict(labels or {})}, "spec": pod_spec}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": {"replicas": replicas, "template": template}}


def claim_template(name: str, device_class: str, count: int | None = None, v1beta1: bool = False) -> dict[str, Any]:
    request: dict[str, Any] = {"name": "gpus"}
    exact: dict[str, Any] = {"deviceClassName": device_class}
    if count is not None:
        exact["count"] = count
    request.update(exact if v1beta1 else {"exactly": exact})
    return {"apiVersion": "resource.k8s.io/v1beta1" if v1beta1 else "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name}, "spec": {"spec": {"devices": {"requests": [request]}}}}


def summary(objects: list[dict[str, Any]]) -> dict[str, Any]:
    found = infer(objects).summary()
    found.pop("evidence")
    return found


def test_labels_decide_first_and_the_claim_picks_the_dra_mode_and_count():
    objects = [deployment("decode", {VARIANT: "xpu", VENDOR: "intel", "llm-d.ai/role": "decode"},
                          claims=[{"name": "c", "resourceClaimTemplateName": "tpl"}], replicas=2),
               claim_template("tpl", "gpu.intel.com", 2)]
    assert summary(objects) == {
        "hardware": "intel-xpu", "access_mode": "dra", "request_model": "dra", "benchmark_profile": "intel-xpu",
        "resource": None, "dra_driver": "gpu.intel.com", "partition": None, "network_resource": None, "accelerators_per_pod": {"decode": 2},
        "accelerator_type": {"decode": {"labelKey": "gpu.intel.com/product", "labelValue": "auto"}},
        "guide": "optimized-baseline", "warnings": []}


def test_labels_win_when_the_request_shape_alone_would_not_tell():
    # the pod asks for nothing a profile claims, but the labels say what the overlay is for
    objects = [deployment("decode", {VARIANT: "cpu", VENDOR: "intel"}, resources={"rdma/ib": "1"})]
    found = infer(objects)
    assert (found.target.hardware.id, found.target.mode_name, found.accelerator()) == ("cpu", "default", {"count": 0})
    assert found.evidence[0]["matched_by"] == "upstream_labels"


def test_the_device_class_decides_when_there_are_no_labels():
    objects = [deployment("d", claims=[{"name": "c", "resourceClaimTemplateName": "tpl"}]),
               claim_template("tpl", "gaudi.intel.com", v1beta1=True)]  # count omitted: one device
    assert summary(objects)["hardware"] == "intel-gaudi"
    assert summary(objects)["accelerators_per_pod"] == {"decode": 1}
    assert summary(objects)["dra_driver"] == "gaudi.intel.com"


def test_the_resource_name_decides_last_and_intel_follows_it():
    found = summary([deployment("d", resources={"gpu.intel.com/i915": "2"})])
    assert (found["hardware"], found["access_mode"], found["benchmark_profile"], found["resource"]) == (
        "intel-xpu", "plugin", "intel-i915", "gpu.intel.com/i915")
    assert found["accelerators_per_pod"] == {"decode": 2}


def test_intel_com_gpu_is_the_benchmark_profile_llm_d_benchmark_uses_for_it():
    """llm-d-benchmark's ACCELERATOR_PROFILES maps intel.com/gpu (the older resource name) to intel-i915."""
    found = infer([deployment("d", resources={"intel.com/gpu": "2"})])
    assert (found.target.hardware.id, found.target.mode_name) == ("intel-xpu", "plugin")
    assert found.accelerator() == {"type": "intel-i915", "profile": "intel-i915", "resource": "intel.com/gpu"}
    decode = found.scenario()["scenario"][0]["decode"]
    assert decode["acceleratorType"] == {"labelKey": "gpu.intel.com/product", "labelValue": "auto"}
    assert decode["accelerator"] == {"count": 2}


@pytest.mark.parametrize("spec, value", [
    ({"nodeSelector": {"gpu.intel.com/product": "Max_1550"}}, "Max_1550"),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu.intel.com/product", "operator": "In", "values": ["Max_1100"]}]}]}}}},
     "Max_1100"),
    # two values, or two alternative terms, pin nothing: llm-d-benchmark is left to read the nodes
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu.intel.com/product", "operator": "In", "values": ["Max_1100", "Max_1550"]}]}]}}}},
     "auto"),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu.intel.com/product", "operator": "In", "values": ["Max_1100"]}]},
        {"matchExpressions": [{"key": "gpu.intel.com/product", "operator": "In", "values": ["Max_1550"]}]}]}}}}, "auto"),
])
def test_a_product_the_pods_pin_is_the_roles_accelerator_type(spec, value):
    obj = deployment("d", resources={"gpu.intel.com/xe": "1"})
    obj["spec"]["template"]["spec"].update(spec)
    decode = infer([obj]).scenario()["scenario"][0]["decode"]
    assert decode["acceleratorType"] == {"labelKey": "gpu.intel.com/product", "labelValue": value}


def test_roles_get_their_own_counts_and_replicas():
    labels = {VARIANT: "gpu", VENDOR: "nvidia", "llm-d.ai/guide": "pd-disaggregation"}
    objects = [deployment("prefill", labels | {"llm-d.ai/role": "prefill"}, resources={"nvidia.com/gpu": "1"}, replicas=4),
               deployment("decode", labels | {"llm-d.ai/role": "decode"}, resources={"nvidia.com/gpu": 4}, replicas=1)]
    entry = infer(objects).scenario()["scenario"][0]
    assert entry["name"] == "pd-disaggregation-nvidia"
    on_nvidia = {"labelKey": "nvidia.com/gpu.product", "labelValue": "auto"}
    assert entry["prefill"] == {"enabled": True, "replicas": 4, "acceleratorType": on_nvidia, "accelerator": {"count": 1}}
    assert entry["decode"] == {"replicas": 1, "acceleratorType": on_nvidia, "accelerator": {"count": 4}}


def test_a_leaderworkerset_and_a_list_are_read():
    lws = deployment("lws", {VARIANT: "gpu", VENDOR: "amd"}, resources={"amd.com/gpu": 8}, kind="LeaderWorkerSet")
    template = lws["spec"].pop("template")
    lws["spec"]["leaderWorkerTemplate"] = {"workerTemplate": template}
    found = summary([{"apiVersion": "v1", "kind": "List", "items": [lws]}])
    assert (found["hardware"], found["resource"], found["accelerators_per_pod"]) == ("amd", "amd.com/gpu", {"decode": 8})


def test_nothing_that_resolves_is_refused_never_defaulted():
    objects = [deployment("d", {VARIANT: "npu", VENDOR: "rebellions"}, resources={"rdma/ib": "1"})]
    with pytest.raises(HardwareNotInferred) as caught:
        infer(objects, source="m.yaml")
    assert caught.value.message == (
        "m.yaml: no registered hardware matches this manifest: no llm-d accelerator labels that resolve, no DRA device "
        "class and no extended resource a profile claims (labels: llm-d.ai/accelerator-variant=npu, "
        "llm-d.ai/accelerator-vendor=rebellions; device classes: none; resources: rdma/ib)")
    assert [e["status"] for e in caught.value.details["evidence"]] == ["unsupported", "unsupported"]


def test_a_manifest_without_labels_or_accelerators_is_refused_not_taken_for_cpu():
    with pytest.raises(HardwareNotInferred):
        infer([deployment("d")])


def test_labels_and_request_that_disagree_are_refused():
    objects = [deployment("d", {VARIANT: "xpu", VENDOR: "intel"}, resources={"nvidia.com/gpu": 1})]
    with pytest.raises(HardwareNotInferred) as caught:
        infer(objects)
    assert caught.value.message == ("manifest: the manifest points at two hardware profiles: 'intel-xpu' and resource "
                                    "'nvidia.com/gpu' of 'nvidia'")


def test_labelled_hardware_whose_devices_are_not_requested_is_refused():
    objects = [deployment("d", {VARIANT: "gpu", VENDOR: "nvidia"})]
    with pytest.raises(HardwareNotInferred) as caught:
        infer(objects)
    assert caught.value.message == (
        "manifest: the manifest is for 'nvidia', but no pod requests its devices: no claim for one of its device classes "
        "(gpu.nvidia.com, mig.nvidia.com) and no resource under its prefixes (nvidia.com/gpu, nvidia.com/mig-)")


def test_bad_manifests_are_named():
    with pytest.raises(ManifestInvalid, match=r"^m.yaml: document 1 is not a Kubernetes object"):
        parse_manifest("- a\n", "m.yaml")
    with pytest.raises(ManifestInvalid, match=r"^m.yaml: no pod template found"):
        infer(parse_manifest("kind: ConfigMap\nmetadata: {name: c}\n"), source="m.yaml")
    with pytest.raises(ManifestInvalid, match=r"Deployment/d containers\[0\].resources.amd.com/gpu: 'two'"):
        infer([deployment("d", resources={"amd.com/gpu": "two"})])


def test_build_config_from_manifest_text_and_guide_override():
    text = yaml.safe_dump_all([deployment("d", {VARIANT: "tpu", VENDOR: "google"}, resources={"google.com/tpu": "4"})])
    config = build_config(manifest=text, guide="my-guide")
    assert config.scenario()["scenario"][0]["name"] == "my-guide-google-tpu"
    assert config.accelerator() == {"type": "google", "profile": "google", "resource": "google.com/tpu"}


# -- conformance: the real upstream overlays, rendered by the real kubectl -------------------------

SHARED = Path(os.environ.get("LENS_SHARED_ROOT", Path(__file__).resolve().parents[2] / ".." / "shared"))
OVERLAYS = SHARED / "upstream" / "llm-d" / "guides" / "optimized-baseline" / "modelserver"

# overlay -> (hardware, mode, benchmark profile, resource or DRA driver, accelerators per decode pod),
# from the variant table of the reference (llm-d 7edda66; hpu from 6e295e68)
UPSTREAM = {
    "gpu/vllm/base": ("nvidia", "plugin", "nvidia", "nvidia.com/gpu", 2),
    "amd/vllm": ("amd", "plugin", "amd", "amd.com/gpu", 2),
    "xpu/vllm": ("intel-xpu", "dra", "intel-xpu", "gpu.intel.com", 1),
    "hpu/vllm": ("intel-gaudi", "dra", "intel-gaudi", "gaudi.intel.com", 1),
    "tpu/v6/vllm": ("google-tpu", "plugin", "google", "google.com/tpu", 8),
    "tpu/v7/vllm": ("google-tpu", "plugin", "google", "google.com/tpu", 4),
    "cpu/vllm": ("cpu", "default", None, None, 0),
}
# overlay -> decode.acceleratorType: the TPU overlays pin cloud.google.com/gke-tpu-accelerator in their
# nodeSelector (tpu-v6e-slice, tpu7x); the others pin nothing, so the profile's product label with
# "auto", or (no product label) its node_label_selector
UPSTREAM_ACCELERATOR_TYPES = {
    "gpu/vllm/base": ("nvidia.com/gpu.product", "auto"),
    "amd/vllm": ("amd.com/gpu.product-name", "auto"),
    "xpu/vllm": ("gpu.intel.com/product", "auto"),
    "hpu/vllm": ("intel.feature.node.kubernetes.io/gaudi", "true"),
    "tpu/v6/vllm": ("cloud.google.com/gke-tpu-accelerator", "tpu-v6e-slice"),
    "tpu/v7/vllm": ("cloud.google.com/gke-tpu-accelerator", "tpu7x"),
    "cpu/vllm": ("feature.node.kubernetes.io/cpu-cpuid.AMXBF16", "true"),
}


def kustomize(overlay: Path) -> str:
    """The overlay as real ``kubectl kustomize`` renders it (the test skips without kubectl)."""
    from llm_d_lens.runner import CommandRunner

    runner = CommandRunner()
    if runner.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    return runner.run(["kubectl", "kustomize", str(overlay)], timeout=60).stdout


@pytest.mark.skipif(not OVERLAYS.is_dir(), reason=f"the upstream llm-d overlays are not at {OVERLAYS}")
@pytest.mark.parametrize("overlay", sorted(UPSTREAM))
def test_upstream_overlays_rendered_by_kubectl_are_inferred(overlay):
    found = infer(parse_manifest(kustomize(OVERLAYS / overlay), overlay), source=overlay).summary()
    hardware, mode, profile, how, count = UPSTREAM[overlay]
    assert (found["hardware"], found["access_mode"], found["benchmark_profile"]) == (hardware, mode, profile)
    assert (found["resource"] or found["dra_driver"]) == how
    assert found["accelerators_per_pod"] == {"decode": count}
    assert found["guide"] == "optimized-baseline"
    assert found["evidence"][0]["query"] == "labels"  # the labels were read first
    key, value = UPSTREAM_ACCELERATOR_TYPES[overlay]
    assert found["accelerator_type"] == {"decode": {"labelKey": key, "labelValue": value}}


def _pod_spec(pod_spec: Any) -> dict[str, Any]:
    return {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": pod_spec}}}


@pytest.mark.parametrize("obj, message", [
    (_pod_spec({"containers": "vllm"}), 'm.yaml: Deployment/d containers: expected a list, got "vllm"'),
    (_pod_spec({"containers": ["vllm"]}), 'm.yaml: Deployment/d containers[0]: expected a mapping, got "vllm"'),
    (_pod_spec({"containers": [{"resources": ["x"]}]}), 'm.yaml: Deployment/d containers[0].resources: expected a mapping, got ["x"]'),
    (_pod_spec({"containers": [{"resources": {"limits": "4"}}]}),
     'm.yaml: Deployment/d containers[0].resources.limits: expected a mapping, got "4"'),
    (_pod_spec({"containers": [], "resourceClaims": 5}), "m.yaml: Deployment/d resourceClaims: expected a list, got 5"),
    (_pod_spec({"containers": [], "resourceClaims": ["gpu"]}),
     'm.yaml: Deployment/d resourceClaims[0]: expected a mapping, got "gpu"'),
    (_pod_spec(7), "m.yaml: Deployment/d spec.template.spec: expected a mapping, got 7"),
    ({"kind": "ResourceClaimTemplate", "metadata": {"name": "t"}, "spec": {"spec": {"devices": {"requests": ["gpus"]}}}},
     'm.yaml: ResourceClaimTemplate/t spec.devices.requests[0]: expected a mapping, got "gpus"'),
    (_pod_spec({"containers": [{"resources": {"limits": {"amd.com/gpu": "two"}}}]}),
     "m.yaml: Deployment/d containers[0].resources.amd.com/gpu: 'two' is not a whole number of devices"),
])
def test_a_wrong_shape_in_a_manifest_names_the_file_object_and_field(obj, message):
    """Wrong types are refused with where they are, never an AttributeError traceback."""
    with pytest.raises(ManifestInvalid) as caught:
        infer([obj], source="m.yaml")
    assert caught.value.message == message


def server(args: list[str], env: dict[str, str] | None = None, gpus: int | None = 8, name: str = "vllm") -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "args": args, "env": [{"name": k, "value": v} for k, v in (env or {}).items()]}
    if gpus is not None:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    return container


def lws(containers: list[dict[str, Any]], size: int = 2) -> dict[str, Any]:
    labels = {VARIANT: "gpu", VENDOR: "nvidia", "llm-d.ai/role": "decode"}
    template = {"metadata": {"labels": labels}, "spec": {"containers": containers}}
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "wide", "labels": labels},
            "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": size, "workerTemplate": template}}}


WIDE_EP_SCRIPT = ["exec vllm serve m \\\n --tensor-parallel-size $TP_SIZE \\\n"
                  " --data-parallel-size $((LWS_GROUP_SIZE * DP_SIZE_LOCAL)) \\\n --data-parallel-size-local $DP_SIZE_LOCAL\n"]


def decode_of(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return infer(objects).scenario()["scenario"][0]["decode"]


def parallelism_evidence(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in infer(objects).evidence if e["query"] == "parallelism"]


def test_the_engines_literal_flags_are_the_roles_parallelism():
    obj = deployment("d", {VARIANT: "gpu", VENDOR: "nvidia"}, resources={"nvidia.com/gpu": 4})
    obj["spec"]["template"]["spec"]["containers"][0]["args"] = ["--tensor-parallel-size=2", "--pipeline-parallel-size", "2"]
    decode = decode_of([obj])
    # llm-d-benchmark has no pipeline field; tensor x pipeline is the count per pod
    assert decode["parallelism"] == {"tensor": 2, "data": 1, "dataLocal": 1}
    assert decode["accelerator"] == {"count": 4}


def test_a_leaderworkersets_sizes_come_from_env_and_its_group_size():
    objects = [lws([server(["/bin/sh", "-c", *WIDE_EP_SCRIPT], {"TP_SIZE": "1", "DP_SIZE_LOCAL": "8"})], size=2)]
    assert decode_of(objects)["parallelism"] == {"tensor": 1, "data": 16, "dataLocal": 8}
    (evidence,) = parallelism_evidence(objects)
    assert evidence["status"] == "known" and evidence["object"] == "LeaderWorkerSet/wide"
    assert evidence["stated"]["--data-parallel-size"] == "$((LWS_GROUP_SIZE * DP_SIZE_LOCAL))"


def test_a_size_that_is_not_known_gives_no_parallelism_and_says_which():
    objects = [lws([server(["/bin/sh", "-c", *WIDE_EP_SCRIPT], {"DP_SIZE_LOCAL": "8"})])]
    assert "parallelism" not in decode_of(objects)
    (evidence,) = parallelism_evidence(objects)
    assert evidence["status"] == "unknown" and "--tensor-parallel-size" in evidence["reason"]


def test_the_container_asking_for_the_devices_is_read_not_a_sidecar():
    proxy = server(["--data-parallel-size=4", "--tensor-parallel-size=4"], gpus=None, name="routing-proxy")
    vllm = server(["--tensor-parallel-size=8"])
    assert decode_of([lws([proxy, vllm])])["parallelism"] == {"tensor": 8, "data": 1, "dataLocal": 1}


def test_containers_stating_different_sizes_give_no_parallelism():
    objects = [lws([server(["--tensor-parallel-size=8"]), server(["--tensor-parallel-size=4"], name="other")])]
    assert "parallelism" not in decode_of(objects)
    assert parallelism_evidence(objects)[0]["reason"] == "the pod's containers state different sizes"


def test_a_manifest_without_engine_flags_has_no_parallelism_evidence():
    obj = deployment("d", {VARIANT: "gpu", VENDOR: "nvidia"}, resources={"nvidia.com/gpu": 2})
    assert "parallelism" not in decode_of([obj]) and parallelism_evidence([obj]) == []


WIDE_EP = SHARED / "upstream" / "llm-d" / "guides" / "wide-ep-lws" / "modelserver" / "gpu"
# overlay -> the per-role (tensor, data, dataLocal) read by hand from its files: vllm/base sets
# TP_SIZE=1 and DP_SIZE_LOCAL=8 in env with LeaderWorkerSet size 2; vllm-deepseek-v4/base DP_SIZE_LOCAL=4
WIDE_EP_PARALLELISM = {"vllm/base": (1, 16, 8), "vllm-deepseek-v4/base": (1, 8, 4)}


@pytest.mark.skipif(not WIDE_EP.is_dir(), reason=f"the upstream llm-d wide-ep-lws overlays are not at {WIDE_EP}")
@pytest.mark.parametrize("overlay", sorted(WIDE_EP_PARALLELISM))
def test_upstream_wide_ep_overlays_state_their_parallelism(overlay):
    entry = infer(parse_manifest(kustomize(WIDE_EP / overlay), overlay), source=overlay).scenario()["scenario"][0]
    tensor, data, local = WIDE_EP_PARALLELISM[overlay]
    for role in ("prefill", "decode"):
        assert entry[role]["parallelism"] == {"tensor": tensor, "data": data, "dataLocal": local}
        assert entry[role]["accelerator"] == {"count": tensor * local}
