"""Discovery over the fixture tree: every layout found from the profiles' templates alone."""

from __future__ import annotations

import os
from pathlib import Path

from llm_d_lens.deploy.conftest import ACME, FILES, overlay, registry_of, write_tree
from llm_d_lens.deploy.discovery import discover
from llm_d_lens.deploy.source import LlmdSource
from llm_d_lens.hardware.registry import get_registry


def rows(catalog):
    return {(o.guide, o.hardware, o.model_server, o.name, o.path) for o in catalog.overlays}


def test_every_layout_is_found_with_its_sub_path(source: LlmdSource) -> None:
    catalog = discover(source, get_registry())
    m = "guides/demo/modelserver"
    assert rows(catalog) == {
        ("demo", "amd", "vllm", ".", f"{m}/amd/vllm"),  # directory amd, labelled gpu/amd
        ("demo", "nvidia", "sglang", ".", f"{m}/gpu/sglang"),  # flat
        ("demo", "nvidia", "vllm", "base", f"{m}/gpu/vllm/base"),  # provider sub-overlays
        ("demo", "nvidia", "vllm", "gke", f"{m}/gpu/vllm/gke"),
        ("demo", "nvidia", "vllm", "broken", f"{m}/gpu/vllm/broken"),
        ("demo", "intel-xpu", "vllm", ".", f"{m}/xpu/vllm"),
        ("demo", "google-tpu", "vllm", "v6", f"{m}/tpu/v6/vllm"),  # generation level (the * segment)
        ("demo", "google-tpu", "vllm", "v7", f"{m}/tpu/v7/vllm"),
        ("demo", "google-tpu", "vllm", "base", f"{m}/tpu/base/vllm"),
        ("flat-tpu", "google-tpu", "vllm", ".", "guides/flat-tpu/modelserver/tpu/vllm"),  # extra_overlay_roots
        ("serving/multimodal", "cpu", "vllm", ".", "guides/serving/multimodal/modelserver/cpu/vllm"),  # nested guide
    }


def test_directories_no_profile_owns_are_reported_not_dropped(source: LlmdSource) -> None:
    catalog = discover(source, get_registry())
    assert {(u.guide, u.name) for u in catalog.unsupported} == {
        ("demo", "npu"), ("demo", "components"),
    }  # recipes/modelserver looks like a guide, but guides/recipes is the shared recipe library
    assert catalog.guides() == ["demo", "flat-tpu", "serving/multimodal"]


def test_a_guide_filter_walks_only_that_guide(source: LlmdSource) -> None:
    catalog = discover(source, get_registry(), guide="serving/multimodal")
    assert rows(catalog) == {("serving/multimodal", "cpu", "vllm", ".", "guides/serving/multimodal/modelserver/cpu/vllm")}
    assert catalog.unsupported == []


def test_a_hardware_lens_has_never_seen_works_from_its_profile(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", {
        **{k: v for k, v in FILES.items() if k.startswith("guides/recipes/")},
        "guides/g1/modelserver/acc/vllm/base/kustomization.yaml": overlay("acc", "acme", up=5, image="registry.acme.example/serve:1.0"),
        "guides/g1/modelserver/acc/vllm/cloud-x/kustomization.yaml": "resources:\n  - ../base\n",
    })
    catalog = discover(LlmdSource(root.resolve(), str(root)), registry_of(ACME))
    assert rows(catalog) == {
        ("g1", "acme", "vllm", "base", "guides/g1/modelserver/acc/vllm/base"),
        ("g1", "acme", "vllm", "cloud-x", "guides/g1/modelserver/acc/vllm/cloud-x"),
    }


def test_symlinks_out_of_the_source_are_skipped_and_named(tree: Path, tmp_path: Path) -> None:
    outside = write_tree(tmp_path / "outside", {"kustomization.yaml": "resources: []\n"})
    os.symlink(outside, tree / "guides/demo/modelserver/gpu/vllm/evil")
    os.symlink(tree / "guides/demo/modelserver/gpu/sglang", tree / "guides/demo/modelserver/gpu/vllm/shared")
    os.symlink(tree / "guides/demo/modelserver/gpu/vllm/base", tree / "guides/demo/modelserver/gpu/vllm/alias")
    catalog = discover(LlmdSource(tree.resolve(), str(tree)), get_registry())
    names = {o.name for o in catalog.overlays if o.hardware == "nvidia" and o.model_server == "vllm"}
    # a link inside the source is followed; one to a directory already walked is not listed twice
    assert names == {"base", "gke", "broken", "shared"}
    assert [(s.path, s.reason) for s in catalog.skipped] == [
        ("guides/demo/modelserver/gpu/vllm/evil", "a symlink pointing outside the llm-d source")
    ]


def test_a_symlink_cycle_does_not_loop(tree: Path) -> None:
    os.symlink("..", tree / "guides/demo/modelserver/gpu/vllm/base/loop")
    catalog = discover(LlmdSource(tree.resolve(), str(tree)), get_registry(), guide="demo")
    names = {o.name for o in catalog.overlays if o.hardware == "nvidia" and o.model_server == "vllm"}
    assert names == {"base", "gke", "broken"}  # the link leads back to a directory already walked


def test_a_symlink_loop_lists_no_other_hardware_under_this_one(tree: Path) -> None:
    """A link back up (``gpu/loop -> ..``) used to list amd's, xpu's and tpu's overlays as nvidia's."""
    expected = {("nvidia", "sglang", "."), ("nvidia", "vllm", "base"), ("nvidia", "vllm", "broken"), ("nvidia", "vllm", "gke")}
    for link, target in [("guides/demo/modelserver/gpu/loop", ".."), ("guides/demo/modelserver/gpu/vllm/up", "../.."),
                         ("guides/demo/modelserver/gpu/vllm/base/again", "../../..")]:
        os.symlink(target, tree / link)
        catalog = discover(LlmdSource(tree.resolve(), str(tree)), get_registry(), guide="demo")
        assert {(o.hardware, o.model_server, o.name) for o in catalog.overlays if o.hardware == "nvidia"} == expected
        assert (link, "a symlink loop (it points at a directory that contains it)") in [(s.path, s.reason) for s in catalog.skipped]
        assert {o.hardware for o in catalog.overlays} == {"amd", "nvidia", "intel-xpu", "google-tpu"}
        os.unlink(tree / link)
