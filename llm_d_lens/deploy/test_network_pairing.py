"""GPU:NIC pairing per pod and MIG partitions requested, on real ``kubectl kustomize`` renders (issue 31).

The pairing overlays are written here in the shapes llm-d's pd-disaggregation and wide-EP guides use
(not copied): SR-IOV VFs one per GPU (``amd/vllm/oci``-like), ``rdma/ib: 1`` beside 8 GPUs
(``coreweave``-like), and a GKE-like claim pairing ``gpu.nvidia.com`` with ``mrdma.google.com``
under a ``matchAttribute: resource.kubernetes.io/pcieRoot`` constraint. The MIG renders use the
shared upstream tree (../shared/upstream/llm-d), skipped with the reason when it is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_d_lens.deploy.conftest import FILES, needs_kustomize, overlay, write_tree
from llm_d_lens.deploy.errors import DeployRequestInvalid, ValidationFailed
from llm_d_lens.deploy.service import RenderRequest, render
from llm_d_lens.deploy.test_conformance import ROOT

needs_tree = pytest.mark.skipif(ROOT is None, reason="no llm-d tree: ../shared/upstream/llm-d is absent and $LENS_LLM_D_ROOT is unset")

GKE_CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: gke-rdma-template
spec:
  spec:
    devices:
      requests:
        - name: gpu
          exactly:
            deviceClassName: gpu.nvidia.com
            count: 1
        - name: rdma
          exactly:
            deviceClassName: mrdma.google.com
            count: 1
      constraints:
        - requests: [gpu, rdma]
          matchAttribute: resource.kubernetes.io/pcieRoot
"""

GKE_PATCH = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: decode
spec:
  template:
    spec:
      containers:
        - name: modelserver
          resources:
            claims:
              - name: gpu-rdma
      resourceClaims:
        - name: gpu-rdma
          resourceClaimTemplateName: gke-rdma-template
"""

PD = "guides/pd-demo/modelserver/gpu/vllm"
PAIRING_FILES = {
    **FILES,
    f"{PD}/oci/kustomization.yaml": overlay("gpu", "nvidia", up=5, image="vllm/vllm-openai:v0.1.0", resources=(
        "limits:\n  nvidia.com/gpu: 4\n  nvidia.com/sriov-rdma-vf: 4\nrequests:\n  nvidia.com/gpu: 4\n  nvidia.com/sriov-rdma-vf: 4")),
    f"{PD}/coreweave/kustomization.yaml": overlay("gpu", "nvidia", up=5, image="vllm/vllm-openai:v0.1.0", resources=(
        "limits:\n  nvidia.com/gpu: 8\n  rdma/ib: 1\nrequests:\n  nvidia.com/gpu: 8\n  rdma/ib: 1")),
    f"{PD}/gke/kustomization.yaml": overlay("gpu", "nvidia", up=5, image="vllm/vllm-openai:v0.1.0",
                                           extra="  - claim.yaml\n", patch_file="patch.yaml"),
    f"{PD}/gke/claim.yaml": GKE_CLAIM,
    f"{PD}/gke/patch.yaml": GKE_PATCH,
}


@pytest.fixture
def pd_tree(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "llm-d", PAIRING_FILES)


def pd(tree: Path, overlay_name: str, **options):
    return render(RenderRequest(guide="pd-demo", hardware="nvidia", overlay=overlay_name, **options), root=tree)


@needs_kustomize
def test_per_device_nics_are_reported_paired_per_pod(pd_tree):
    result = pd(pd_tree, "oci")
    [pairing] = result.to_dict(objects=False)["pairing"]
    assert pairing == {"pod": "Deployment/decode", "accelerators": 4, "nics": {"sriov-rdma-vf": 4},
                       "pairing": {"sriov-rdma-vf": "per-device"}, "constraints": [], "platform": [], "status": "paired"}
    assert any("GPU:NIC 4 accelerator(s) : 4 × sriov-rdma-vf (per-device) [paired]" in line for line in result.explanation())


@needs_kustomize
def test_a_count_that_breaks_a_per_device_pairing_is_refused(pd_tree):
    with pytest.raises(ValidationFailed) as caught:
        pd(pd_tree, "oci", count=2)
    codes = [issue.code for issue in caught.value.issues] if hasattr(caught.value, "issues") else []
    text = str(caught.value.to_dict() if hasattr(caught.value, "to_dict") else caught.value)
    assert "NIC_PAIRING_BROKEN" in text or "NIC_PAIRING_BROKEN" in codes
    assert "2 accelerator(s) : 4 × sriov-rdma-vf" in text


@needs_kustomize
def test_a_shared_nic_serves_any_count(pd_tree):
    result = pd(pd_tree, "coreweave", count=4)
    [pairing] = result.to_dict(objects=False)["pairing"]
    assert (pairing["accelerators"], pairing["nics"], pairing["status"]) == (4, {"infiniband": 1}, "shared")


@needs_kustomize
def test_a_dra_claim_keeps_its_match_attribute_and_a_broken_count_is_refused(pd_tree):
    result = pd(pd_tree, "gke", mode="dra")
    [pairing] = result.to_dict(objects=False)["pairing"]
    assert pairing["status"] == "paired" and pairing["nics"] == {"gke-rdma": 1}
    assert pairing["constraints"] == ["resource.kubernetes.io/pcieRoot"]
    [template] = [o for o in result.objects if o["kind"] == "ResourceClaimTemplate"]
    devices = template["spec"]["spec"]["devices"]
    assert devices["constraints"] == [{"requests": ["gpu", "rdma"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    assert {r["name"] for r in devices["requests"]} == {"gpu", "rdma"}
    with pytest.raises(ValidationFailed) as caught:
        pd(pd_tree, "gke", mode="dra", count=2)
    assert "NIC_PAIRING_BROKEN" in str(caught.value.to_dict() if hasattr(caught.value, "to_dict") else caught.value)


@needs_kustomize
def test_leaving_dra_drops_the_tie_with_a_warning_and_keeps_the_nic(pd_tree):
    result = pd(pd_tree, "gke", mode="plugin")
    [pairing] = result.to_dict(objects=False)["pairing"]
    assert (pairing["accelerators"], pairing["nics"], pairing["status"]) == (1, {"gke-rdma": 1}, "paired")
    assert [w.code for w in result.warnings if w.code.startswith("NIC_")] == ["NIC_CONSTRAINT_LOST"]


def decode_pod(result) -> dict:
    (pod,) = [o for o in result.objects if o.get("kind") == "Deployment" and "decode" in o["metadata"]["name"]]
    return pod["spec"]["template"]["spec"]


@needs_tree
@needs_kustomize
def test_a_mig_partition_renders_in_plugin_mode():
    result = render(RenderRequest(guide="optimized-baseline", hardware="nvidia", overlay="base", mode="plugin",
                                  resource_name="nvidia.com/mig-1g.10gb"), root=ROOT)
    limits = decode_pod(result)["containers"][0]["resources"]["limits"]
    assert limits.get("nvidia.com/mig-1g.10gb") == 2 and "nvidia.com/gpu" not in limits


@needs_tree
@needs_kustomize
def test_a_mig_partition_renders_in_dra_mode_as_the_partition_class_and_its_profile():
    result = render(RenderRequest(guide="optimized-baseline", hardware="nvidia", overlay="base", mode="dra",
                                  resource_name="nvidia.com/mig-1g.10gb"), root=ROOT)
    [template] = [o for o in result.objects if o["kind"] == "ResourceClaimTemplate"]
    [request] = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["deviceClassName"] == "mig.nvidia.com"
    assert request["exactly"]["count"] == 2
    assert request["exactly"]["selectors"] == [{"cel": {"expression": 'device.attributes["gpu.nvidia.com"].profile == "1g.10gb"'}}]
    spec = decode_pod(result)
    assert "nvidia.com/gpu" not in (spec["containers"][0].get("resources", {}).get("limits") or {})
    assert spec["resourceClaims"][0]["resourceClaimTemplateName"] == template["metadata"]["name"]


def test_a_dra_mode_refuses_a_resource_that_is_no_partition():
    from llm_d_lens.deploy.shape import FitOptions, Fitter
    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.hardware.resolution import Resolver

    registry = get_registry()
    with pytest.raises(DeployRequestInvalid) as caught:
        Fitter(registry.get("nvidia"), FitOptions(mode="dra", resource_name="nvidia.com/gpu.shared"), Resolver(registry))
    assert "nvidia.com/gpu.shared" in str(caught.value)


@needs_tree
@needs_kustomize
@pytest.mark.parametrize("overlay_name, nics, status", [
    ("coreweave", {"infiniband": 1}, "shared"),  # rdma/ib: 1 beside 8 GPUs
    ("gke", {}, "platform"),  # networking.gke.io.networks/rdma-N: "0", the webhook injects the .IP requests
])
def test_the_upstream_wide_ep_overlays_report_their_pairing_per_pod(overlay_name, nics, status):
    result = render(RenderRequest(guide="wide-ep-lws", hardware="nvidia", overlay=overlay_name), root=ROOT)
    pairing = result.to_dict(objects=False)["pairing"]
    assert {p["pod"].split(" ")[0] for p in pairing} == {"LeaderWorkerSet/wide-ep-llm-d-decode",
                                                         "LeaderWorkerSet/wide-ep-llm-d-prefill"}
    assert all((p["accelerators"], p["nics"], p["status"]) == (8, nics, status) for p in pairing)
    assert not [w for w in result.warnings if w.code.startswith("NIC_") or w.code == "DEVICE_NOT_REGISTERED"]
