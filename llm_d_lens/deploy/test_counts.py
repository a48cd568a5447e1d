"""A pod's accelerator count is the sum over all of its claims and requests, in every access mode.

Upstream may ask for a tensor-parallel-4 engine's devices through four claims of one device
each (or four templates, or several requests in one claim); rendering that as one device, or
refusing it as a count mismatch, deploys the wrong thing. Checked on hand-written objects and on
a small overlay rendered by the real kustomize.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_d_lens.deploy.conftest import FILES, XPU_PATCH, claim_template, deployment, needs_kustomize, write_tree
from llm_d_lens.deploy.service import RenderRequest, render
from llm_d_lens.deploy.shape import FitOptions, fit
from llm_d_lens.deploy.workloads import all_pod_templates
from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.hardware.resolution import Resolver

XPU = {"llm-d.ai/accelerator-variant": "xpu", "llm-d.ai/accelerator-vendor": "intel"}
ONE_XPU = {"name": "intel", "exactly": {"deviceClassName": "gpu.intel.com", "count": 1}}
NIC = {"name": "nic", "exactly": {"deviceClassName": "rdma.example.net", "count": 1}}


def run(objects: list[dict[str, Any]], hardware: str, **options: Any):
    registry = get_registry()
    return fit(objects, registry.get(hardware), FitOptions(**options), Resolver(registry))


def four_claims_one_template() -> list[dict[str, Any]]:
    claims = [{"name": f"xpu-{i}", "resourceClaimTemplateName": "one-xpu"} for i in range(4)]
    return [claim_template("one-xpu", ONE_XPU),
            deployment({}, labels=XPU, claims=claims, uses=[{"name": c["name"]} for c in claims],
                       image="ghcr.io/llm-d/llm-d-xpu:v0.7.0")]


def four_templates() -> list[dict[str, Any]]:
    templates = [claim_template(f"xpu-{i}", ONE_XPU) for i in range(4)]
    claims = [{"name": f"c{i}", "resourceClaimTemplateName": f"xpu-{i}"} for i in range(4)]
    return [*templates, deployment({}, labels=XPU, claims=claims, uses=[{"name": c["name"]} for c in claims],
                                   image="ghcr.io/llm-d/llm-d-xpu:v0.7.0")]


def pod_of(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (pod,) = [p for p in all_pod_templates(objects)]
    return pod.spec


def devices(objects: list[dict[str, Any]], device_class: str) -> int:
    """Devices the pod gets: every claim entry's template requests on ``device_class``, summed."""
    templates = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ResourceClaimTemplate"}
    total = 0
    for entry in pod_of(objects).get("resourceClaims", []):
        for request in templates[entry["resourceClaimTemplateName"]]["spec"]["spec"]["devices"]["requests"]:
            if request["exactly"]["deviceClassName"] == device_class:
                total += request["exactly"]["count"]
    return total


@pytest.mark.parametrize("objects", [four_claims_one_template(), four_templates()], ids=["one-template", "four-templates"])
def test_four_one_device_claims_are_four_devices_in_plugin_mode(objects: list[dict[str, Any]]) -> None:
    result = run(objects, "intel-xpu", mode="plugin")
    assert result.counts == {"Deployment/ob-decode": 4}
    assert [o["kind"] for o in result.objects] == ["Deployment"]  # every accelerator claim template went
    pod = pod_of(result.objects)
    assert "resourceClaims" not in pod
    assert pod["containers"][0]["resources"] == {"limits": {"gpu.intel.com/xe": 4}, "requests": {"gpu.intel.com/xe": 4}}


@pytest.mark.parametrize("objects", [four_claims_one_template(), four_templates()], ids=["one-template", "four-templates"])
def test_four_one_device_claims_are_kept_as_four_devices_in_dra_mode(objects: list[dict[str, Any]]) -> None:
    result = run(objects, "intel-xpu", mode="dra")
    assert result.counts == {"Deployment/ob-decode": 4}
    pod = pod_of(result.objects)
    assert pod == pod_of(objects)  # already the mode's shape: upstream's claims stay as they are
    assert devices(result.objects, "gpu.intel.com") == 4
    assert "keeps the overlay's 4 claim(s)" in result.notes[0]


def test_claims_are_folded_into_one_when_the_count_changes() -> None:
    result = run(four_claims_one_template(), "intel-xpu", mode="dra", count=8)
    pod = pod_of(result.objects)
    assert len(pod["resourceClaims"]) == 1  # one allocation of eight, not four of eight
    assert devices(result.objects, "gpu.intel.com") == 8
    assert pod["containers"][0]["resources"]["claims"] == [{"name": pod["resourceClaims"][0]["name"]}]
    result = run(four_templates(), "intel-xpu", mode="dra", count=8)
    used = {pod_of(result.objects)["resourceClaims"][0]["resourceClaimTemplateName"]}
    assert {o["metadata"]["name"] for o in result.objects if o["kind"] == "ResourceClaimTemplate"} == used


def test_a_template_another_pod_shares_is_copied_before_it_changes() -> None:
    objects = four_claims_one_template()
    prefill = copy.deepcopy(objects[1])
    prefill["metadata"]["name"] = "ob-prefill"
    prefill["spec"]["template"]["spec"]["resourceClaims"] = [{"name": "xpu-0", "resourceClaimTemplateName": "one-xpu"}]
    prefill["spec"]["template"]["spec"]["containers"][0]["resources"]["claims"] = [{"name": "xpu-0"}]
    result = run([*objects, prefill], "intel-xpu", mode="dra", count=4)
    assert result.counts == {"Deployment/ob-decode": 4, "Deployment/ob-prefill": 4}
    by_pod = {p.name: p.spec for p in all_pod_templates(result.objects)}
    templates = {o["metadata"]["name"]: o for o in result.objects if o["kind"] == "ResourceClaimTemplate"}
    # decode's four one-device claims already make four: kept, and its template is unchanged...
    assert {e["resourceClaimTemplateName"] for e in by_pod["ob-decode"]["resourceClaims"]} == {"one-xpu"}
    assert templates["one-xpu"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1
    # ...while prefill, asked for four through the same template, claims from its own copy
    (entry,) = by_pod["ob-prefill"]["resourceClaims"]
    assert entry["resourceClaimTemplateName"] == "one-xpu-ob-prefill"
    assert templates["one-xpu-ob-prefill"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 4
    plugin = run([*four_claims_one_template(), prefill], "intel-xpu", mode="plugin")
    assert plugin.counts == {"Deployment/ob-decode": 4, "Deployment/ob-prefill": 1}  # each its own


def test_several_requests_in_one_claim_add_up_and_other_devices_stay() -> None:
    template = claim_template("gpus", {"name": "a", "exactly": {"deviceClassName": "gpu.intel.com", "count": 2}},
                              {"name": "b", "exactly": {"deviceClassName": "gpu.intel.com", "count": 2}}, NIC)
    objects = [template, deployment({}, labels=XPU, claims=[{"name": "c", "resourceClaimTemplateName": "gpus"}],
                                    uses=[{"name": "c"}], image="ghcr.io/llm-d/llm-d-xpu:v0.7.0")]
    dra = run(objects, "intel-xpu", mode="dra")
    assert dra.counts == {"Deployment/ob-decode": 4}
    assert dra.objects == objects  # already right for the mode: kept
    folded = run(objects, "intel-xpu", mode="dra", count=4, pci_allow=("0000:3b:00.0", "3c:00.0", "3d:00.0", "3e:00.0"))
    requests = folded.objects[0]["spec"]["spec"]["devices"]["requests"]
    assert [(r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"]) for r in requests] == [
        ("intel", "gpu.intel.com", 4), ("nic", "rdma.example.net", 1)]
    plugin = run(objects, "intel-xpu", mode="plugin")
    assert plugin.counts == {"Deployment/ob-decode": 4}
    assert plugin.objects[0]["spec"]["spec"]["devices"]["requests"] == [NIC]  # the NIC claim is not Lens's to drop


def test_a_claim_two_containers_share_counts_once() -> None:
    objects = [claim_template("two", {"name": "intel", "exactly": {"deviceClassName": "gpu.intel.com", "count": 2}}),
               deployment({}, labels=XPU, claims=[{"name": "c", "resourceClaimTemplateName": "two"}], uses=[{"name": "c"}],
                          image="ghcr.io/llm-d/llm-d-xpu:v0.7.0")]
    objects[1]["spec"]["template"]["spec"]["containers"][1]["resources"] = {"claims": [{"name": "c"}]}
    result = run(objects, "intel-xpu", mode="plugin")
    assert result.counts == {"Deployment/ob-decode": 2}
    containers = pod_of(result.objects)["containers"]
    # extended resources are not shared: the pod's two devices go to the first container only
    assert containers[0]["resources"]["limits"] == {"gpu.intel.com/xe": 2}
    assert "resources" not in containers[1]


def test_extended_resources_of_several_containers_add_up() -> None:
    objects = [deployment({"limits": {"nvidia.com/gpu": 2}})]
    objects[0]["spec"]["template"]["spec"]["containers"][1]["resources"] = {"limits": {"nvidia.com/gpu": 2}}
    result = run(objects, "nvidia", mode="dra")
    assert result.counts == {"Deployment/ob-decode": 4}
    assert devices(result.objects, "gpu.nvidia.com") == 4


# -- the same through the real kustomize --------------------------------------------------------

def four_claims_patch() -> str:
    """The xpu fixture's patch, asking for its device through four one-device claims (tensor parallel 4)."""
    patch = yaml.safe_load(XPU_PATCH)
    pod = patch["spec"]["template"]["spec"]
    pod["resourceClaims"] = [{"name": f"xpu-{i}", "resourceClaimTemplateName": "xpu-claim"} for i in range(4)]
    container = pod["containers"][0]
    container["args"] = ["Qwen/Qwen3-0.6B", "--tensor-parallel-size=4"]
    container["resources"]["claims"] = [{"name": f"xpu-{i}"} for i in range(4)]
    return yaml.safe_dump(patch)


@pytest.fixture
def four_claim_tree(tmp_path: Path) -> Path:
    files = dict(FILES)
    files["guides/demo/modelserver/xpu/vllm/patch.yaml"] = four_claims_patch()
    return write_tree(tmp_path / "llm-d", files)


@needs_kustomize
@pytest.mark.parametrize("mode", ["plugin", "dra"])
def test_a_rendered_four_claim_overlay_asks_for_four_devices(four_claim_tree: Path, mode: str) -> None:
    result = render(RenderRequest(guide="demo", hardware="intel-xpu", mode=mode), root=four_claim_tree)
    assert result.fitted.counts == {"Deployment/decode": 4}
    assert [w.code for w in result.warnings] == []
    pod = pod_of(result.objects)
    if mode == "plugin":
        assert pod["containers"][0]["resources"]["limits"] == {"gpu.intel.com/xe": 4}
        assert "resourceClaims" not in pod
    else:
        assert devices(result.objects, "gpu.intel.com") == 4 and len(pod["resourceClaims"]) == 4
