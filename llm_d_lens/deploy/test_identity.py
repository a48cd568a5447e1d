"""Which hardware an overlay is for, when its labels are not in its Kustomization files.

Upstream moved the ``llm-d.ai/accelerator-*`` labels of some guides (wide-ep-lws at 7edda66) into
the resource YAML; labels may also arrive through a patch. The listing reads resource files too,
and a render confirms the identity from the rendered pods instead of refusing the overlay.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_d_lens.deploy.conftest import BASE_DEPLOYMENT, FILES, needs_kustomize, write_tree
from llm_d_lens.deploy.errors import OverlayLabelMismatch
from llm_d_lens.deploy.service import RenderRequest, describe_guides, render

LABELLED_DEPLOYMENT = BASE_DEPLOYMENT.replace(
    "      labels:\n        llm-d.ai/role: decode\n",
    "      labels:\n        llm-d.ai/role: decode\n        llm-d.ai/accelerator-variant: gpu\n"
    "        llm-d.ai/accelerator-vendor: nvidia\n        llm-d.ai/model: Qwen3-0.6B\n")
GPU_DEPLOYMENT = LABELLED_DEPLOYMENT.replace("          image: REPLACE_IMAGE\n", "          image: vllm/vllm-openai:v0.1.0\n"
                                             "          resources:\n            limits:\n              nvidia.com/gpu: 4\n")


def label_patch(variant: str, vendor: str) -> str:
    return ("resources:\n  - ../base\npatches:\n  - target:\n      kind: Deployment\n    patch: |-\n"
            "      - op: add\n        path: /spec/template/metadata/labels/llm-d.ai~1accelerator-variant\n"
            f"        value: {variant}\n"
            "      - op: add\n        path: /spec/template/metadata/labels/llm-d.ai~1accelerator-vendor\n"
            f"        value: {vendor}\n")


@pytest.fixture
def lws_tree(tmp_path: Path) -> Path:
    """A guide like wide-ep-lws: the Kustomization lists YAML files whose workloads carry the labels."""
    files = dict(FILES)
    files["guides/wide/modelserver/gpu/vllm/base/kustomization.yaml"] = "resources:\n  - decode.yaml\n"
    files["guides/wide/modelserver/gpu/vllm/base/decode.yaml"] = GPU_DEPLOYMENT
    files["guides/wide/modelserver/gpu/vllm/gke/kustomization.yaml"] = "resources:\n  - ../base\nnamePrefix: gke-\n"
    # no labels in any file: they come from a patch (or not at all)
    files["guides/patched/modelserver/gpu/vllm/base/kustomization.yaml"] = "resources:\n  - decode.yaml\n"
    files["guides/patched/modelserver/gpu/vllm/base/decode.yaml"] = GPU_DEPLOYMENT.replace(
        "        llm-d.ai/accelerator-variant: gpu\n        llm-d.ai/accelerator-vendor: nvidia\n", "")
    files["guides/patched/modelserver/gpu/vllm/nvidia/kustomization.yaml"] = label_patch("gpu", "nvidia")
    files["guides/patched/modelserver/gpu/vllm/amd/kustomization.yaml"] = label_patch("gpu", "amd")
    return write_tree(tmp_path / "llm-d", files)


def test_labels_in_the_resource_yaml_are_read_by_the_listing(lws_tree: Path) -> None:
    report = describe_guides(root=lws_tree, guide="wide")
    rows = {r["overlay"]: r for r in report["overlays"]}
    for name in ("base", "gke"):  # gke inherits them through its base
        assert rows[name]["labels"] == {"llm-d.ai/accelerator-variant": "gpu", "llm-d.ai/accelerator-vendor": "nvidia"}
    assert rows["gke"]["status"] == "ok"
    assert rows["base"]["status"] == "building-block"  # it keeps bare names; gke, built on it, prefixes them


@needs_kustomize
@pytest.mark.parametrize("mode", ["plugin", "dra"])
def test_an_overlay_labelled_in_its_resources_renders_in_every_mode(lws_tree: Path, mode: str) -> None:
    result = render(RenderRequest(guide="wide", hardware="nvidia", overlay="gke", mode=mode), root=lws_tree)
    assert result.fitted.counts == {"Deployment/gke-decode": 4}
    assert result.choice.status.state == "ok"


@needs_kustomize
def test_labels_set_by_a_patch_are_confirmed_from_the_rendered_pods(lws_tree: Path) -> None:
    listed = {r["overlay"]: r["status"] for r in describe_guides(root=lws_tree, guide="patched")["overlays"]}
    assert listed == {"amd": "unlabelled", "base": "unlabelled", "nvidia": "unlabelled"}  # no file says which hardware
    result = render(RenderRequest(guide="patched", hardware="nvidia", overlay="nvidia", mode="plugin"), root=lws_tree)
    assert ("labels of the rendered pods llm-d.ai/accelerator-variant=gpu, llm-d.ai/accelerator-vendor=nvidia "
            "resolve to nvidia") in result.explanation()
    with pytest.raises(OverlayLabelMismatch) as other:
        render(RenderRequest(guide="patched", hardware="nvidia", overlay="amd"), root=lws_tree)
    assert other.value.message == (
        "overlay guides/patched/modelserver/gpu/vllm/amd: its rendered pods are labelled "
        "llm-d.ai/accelerator-variant=gpu, llm-d.ai/accelerator-vendor=amd, which resolve to amd, but nvidia was requested")
    with pytest.raises(OverlayLabelMismatch) as none:
        render(RenderRequest(guide="patched", hardware="nvidia", overlay="base"), root=lws_tree)
    assert "and its rendered pods carry none either, so it cannot be confirmed to be for nvidia" in none.value.message
