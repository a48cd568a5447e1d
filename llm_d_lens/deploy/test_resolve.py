"""Resolution: (guide, hardware, model server, sub-overlay) -> one overlay, or an error saying why not."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from llm_d_lens.deploy.conftest import overlay
from llm_d_lens.deploy.errors import (
    DeployRequestInvalid,
    GuideNotFound,
    OverlayAmbiguous,
    OverlayLabelMismatch,
    OverlayNotFound,
    OverlayUnsafe,
    UnsafeName,
)
from llm_d_lens.deploy.resolve import choose_overlay
from llm_d_lens.deploy.source import LlmdSource
from llm_d_lens.hardware.registry import get_registry


def choose(source: LlmdSource, hardware: str, guide: str = "demo", **kwargs):
    registry = get_registry()
    return choose_overlay(source, registry, registry.get(hardware), guide, requested_as=hardware, **kwargs)


def test_the_default_is_the_default_server_and_the_plain_overlay(source: LlmdSource) -> None:
    choice = choose(source, "cuda")
    assert (choice.overlay.model_server, choice.overlay.name) == ("vllm", "base")
    assert choice.explanation == (
        f"llm-d source: {source.origin}",
        "hardware 'cuda' (profile nvidia): overlays under guides/{guide}/modelserver/{variant}/{model_server} or "
        "guides/{guide}/modelserver/nvidia-{variant}/{model_server} with {variant}=gpu",
        "model server vllm: the default (others: sglang; pass --model-server)",
        "not a default candidate: broken (broken: guides/demo/modelserver/gpu/vllm/broken/kustomization.yaml: "
        "patches[0].path: patch-missing.yaml does not exist (guides/demo/modelserver/gpu/vllm/broken/patch-missing.yaml))",
        "overlay base: the plain one (others: broken, gke; pass --overlay)",
        "labels llm-d.ai/accelerator-variant=gpu, llm-d.ai/accelerator-vendor=nvidia resolve to nvidia",
        "overlay directory: guides/demo/modelserver/gpu/vllm/base",
    )


def test_a_named_sub_overlay_and_model_server_are_honoured(source: LlmdSource) -> None:
    assert choose(source, "nvidia", overlay="gke").overlay.path == "guides/demo/modelserver/gpu/vllm/gke"
    assert choose(source, "nvidia", model_server="sglang").overlay.path == "guides/demo/modelserver/gpu/sglang"
    assert choose(source, "tpu", overlay="v7").overlay.path == "guides/demo/modelserver/tpu/v7/vllm"
    # the directory is "amd" but its labels say gpu/amd: resolved by labels, not by name
    assert choose(source, "rocm").overlay.path == "guides/demo/modelserver/amd/vllm"


def test_several_equal_candidates_are_not_guessed(source: LlmdSource) -> None:
    with pytest.raises(OverlayAmbiguous) as raised:
        choose(source, "google-tpu")
    assert raised.value.message == ("several overlays fit google-tpu (vllm) in guide demo: base, v6, v7; pass --overlay")


def test_an_unknown_sub_overlay_or_server_lists_what_exists(source: LlmdSource) -> None:
    with pytest.raises(OverlayNotFound, match=r"no overlay 'aws' for nvidia \(vllm\) in guide demo; overlays there: base, broken, gke"):
        choose(source, "nvidia", overlay="aws")
    with pytest.raises(OverlayNotFound, match="no trtllm overlay for nvidia in guide demo; model servers there: sglang, vllm"):
        choose(source, "nvidia", model_server="trtllm")


def test_hardware_whose_overlays_upstream_removed(source: LlmdSource) -> None:
    with pytest.raises(OverlayNotFound) as raised:
        choose(source, "gaudi")
    assert raised.value.message.startswith("no overlay for intel-gaudi in this llm-d source (guide demo); "
                                           "this guide has overlays for amd, google-tpu, intel-xpu, nvidia.")


def test_an_unknown_guide_lists_the_guides(source: LlmdSource) -> None:
    with pytest.raises(GuideNotFound) as raised:
        choose(source, "nvidia", guide="inference-scheduling")
    assert "guides there: demo, flat-tpu, serving/multimodal" in raised.value.message


@pytest.mark.parametrize("field,value", [("guide", "../demo"), ("guide", "/etc"), ("model_server", "../gpu"),
                                         ("overlay", "../../amd/vllm"), ("overlay", "base/../../sglang")])
def test_traversal_in_any_name_is_refused(source: LlmdSource, field: str, value: str) -> None:
    kwargs = {"guide": value} if field == "guide" else {field: value}
    with pytest.raises(UnsafeName):
        choose(source, "nvidia", **kwargs)


def test_an_overlay_labelled_for_other_hardware_is_refused_naming_both(tree: Path) -> None:
    shutil.rmtree(tree / "guides/demo/modelserver/gpu/sglang")
    (tree / "guides/demo/modelserver/gpu/sglang").mkdir()
    (tree / "guides/demo/modelserver/gpu/sglang/kustomization.yaml").write_text(
        overlay("gpu", "amd", up=4, image="vllm/vllm-openai:v1"))
    source = LlmdSource(tree.resolve(), str(tree))
    with pytest.raises(OverlayLabelMismatch) as raised:
        choose(source, "cuda", model_server="sglang")
    assert raised.value.message == (
        "overlay guides/demo/modelserver/gpu/sglang is labelled for other hardware: its labels "
        "llm-d.ai/accelerator-variant=gpu, llm-d.ai/accelerator-vendor=amd resolve to amd, "
        "but 'cuda' (profile nvidia) was requested")


def test_an_unlabelled_base_and_a_component_are_refused(source: LlmdSource, tree: Path) -> None:
    with pytest.raises(OverlayLabelMismatch, match="sets no llm-d.ai/accelerator-variant"):
        choose(source, "tpu", overlay="base")
    component = tree / "guides/demo/modelserver/xpu/vllm/tuning"
    component.mkdir()
    (component / "kustomization.yaml").write_text("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n")
    with pytest.raises(DeployRequestInvalid, match="a kustomize Component, not a deployable overlay"):
        choose(source, "xpu", overlay="tuning")


def test_an_overlay_reaching_out_of_the_source_is_refused(tree: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere/kustomization.yaml").write_text("resources: []\n")
    (tree / "guides/demo/modelserver/gpu/vllm/gke/kustomization.yaml").write_text(
        "resources:\n  - ../base\n  - ../../../../../../../elsewhere\n")
    source = LlmdSource(tree.resolve(), str(tree))
    with pytest.raises(OverlayUnsafe, match="points outside the llm-d source"):
        choose(source, "nvidia", overlay="gke")
