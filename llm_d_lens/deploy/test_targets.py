"""Building blocks (overlays upstream only builds others on) are never offered; documented bases are.

Fixture guides, each a few files: a README that applies ``${INFRA_PROVIDER}`` with its options,
bases that rename nothing under overlays that do, and a base that keeps the recipe's placeholder
image. Plus the real tree: the building blocks the shared upstream copy holds at 7edda66.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_d_lens.deploy.conftest import FILES, GPU_LIMITS, needs_kustomize, overlay, write_tree
from llm_d_lens.deploy.errors import OverlayAmbiguous, OverlayBuildingBlock
from llm_d_lens.deploy.service import RenderRequest, describe_guides, render
from llm_d_lens.deploy.source import LlmdSource
from llm_d_lens.deploy.targets import documented_patterns, placeholder_images
from llm_d_lens.deploy.test_conformance import ROOT, MemoRunner, needs_kustomize as needs_real_kustomize

PROVIDERS = "resources:\n  - ../base\nnamePrefix: {name}-\n"
README = """\
# Demo guide

```bash
export GUIDE_NAME="docs"
export INFRA_PROVIDER=gke # options: {options}
kubectl apply -n ${{NAMESPACE}} -k ${{REPO_ROOT}}/guides/${{GUIDE_NAME}}/modelserver/gpu/vllm/${{INFRA_PROVIDER}}/
```

| Hardware | overlay |
|---|---|
| AMD | `modelserver/amd/vllm/` |
"""


def guide_files(guide: str, readme_options: str | None, *, base_prefix: bool = True) -> dict[str, str]:
    """gpu/vllm/{base,gke,aws}: gke and aws build on base; the README (if any) lists ``readme_options``."""
    base = overlay("gpu", "nvidia", up=5, image="vllm/vllm-openai:v0.1.0", resources=GPU_LIMITS)
    if base_prefix:
        base += "namePrefix: demo-\n"
    files = {f"guides/{guide}/modelserver/gpu/vllm/base/kustomization.yaml": base,
             f"guides/{guide}/modelserver/gpu/vllm/gke/kustomization.yaml": PROVIDERS.format(name="gke"),
             f"guides/{guide}/modelserver/gpu/vllm/aws/kustomization.yaml": PROVIDERS.format(name="aws")}
    if readme_options is not None:
        files[f"guides/{guide}/README.md"] = README.format(options=readme_options)
    return files


@pytest.fixture
def docs_tree(tmp_path: Path) -> Path:
    files = {**FILES, **guide_files("docs", "gke, aws"), **guide_files("documented-base", "base | gke | aws"),
             **guide_files("bare", None, base_prefix=False), **guide_files("plain", None)}
    files["guides/documented-base/README.md"] = files["guides/documented-base/README.md"].replace('"docs"', '"documented-base"')
    files["guides/bare/README.md"] = "# no deploy commands here\n"
    return write_tree(tmp_path / "llm-d", files)


def statuses(root: Path, guide: str) -> dict[str, tuple[str, str]]:
    return {r["overlay"]: (r["status"], r["detail"]) for r in describe_guides(root=root, guide=guide, hardware="nvidia")["overlays"]}


def test_a_base_the_readme_does_not_apply_is_a_building_block(docs_tree: Path) -> None:
    found = statuses(docs_tree, "docs")
    assert found["base"] == ("building-block", "a base for aws, gke; the guide's README applies other overlays, not this one")
    assert found["gke"][0] == found["aws"][0] == "ok"


def test_a_base_the_readme_lists_as_an_option_is_a_target(docs_tree: Path) -> None:
    assert {name: status for name, (status, _) in statuses(docs_tree, "documented-base").items()} == {
        "aws": "ok", "base": "ok", "gke": "ok"}


def test_without_documentation_a_base_that_renames_nothing_under_renaming_overlays_is_a_building_block(docs_tree: Path) -> None:
    assert statuses(docs_tree, "bare")["base"] == (
        "building-block", "a base for aws, gke: it sets no name prefix, every overlay built on it does")
    # the same layout whose base prefixes its names too: nothing says it is not deployed, so it is a target
    assert statuses(docs_tree, "plain")["base"][0] == "ok"


def test_the_readme_options_and_listed_paths_become_patterns(docs_tree: Path) -> None:
    source = LlmdSource(docs_tree.resolve(), str(docs_tree))
    patterns = documented_patterns(source, "docs")
    matched = {path for path in ("guides/docs/modelserver/gpu/vllm/gke", "guides/docs/modelserver/gpu/vllm/aws",
                                 "guides/docs/modelserver/gpu/vllm/base", "guides/docs/modelserver/amd/vllm")
               if any(p.fullmatch(path) for p in patterns)}
    assert matched == {"guides/docs/modelserver/gpu/vllm/gke", "guides/docs/modelserver/gpu/vllm/aws",
                       "guides/docs/modelserver/amd/vllm"}


def test_a_building_block_is_never_picked_nor_offered(docs_tree: Path) -> None:
    with pytest.raises(OverlayAmbiguous) as raised:
        render(RenderRequest(guide="docs", hardware="nvidia"), root=docs_tree)
    assert raised.value.details["overlays"] == ["aws", "gke"]  # base is not among the choices
    with pytest.raises(OverlayBuildingBlock) as refused:
        render(RenderRequest(guide="docs", hardware="nvidia", overlay="base"), root=docs_tree)
    assert refused.value.code == "OVERLAY_BUILDING_BLOCK"
    assert refused.value.message == (
        "overlay guides/docs/modelserver/gpu/vllm/base is a building block, not a deploy target: a base for aws, gke; "
        "the guide's README applies other overlays, not this one; pass one of them as --overlay")


@needs_kustomize
def test_a_documented_base_is_the_default(docs_tree: Path) -> None:
    result = render(RenderRequest(guide="documented-base", hardware="nvidia", mode="plugin"), root=docs_tree)
    assert result.choice.overlay.name == "base"


@needs_kustomize
def test_a_base_that_renders_a_placeholder_image_for_its_overlays_to_fill_is_refused(tmp_path: Path) -> None:
    files = {**FILES, **guide_files("placeholder", None)}
    base = files["guides/placeholder/modelserver/gpu/vllm/base/kustomization.yaml"]
    files["guides/placeholder/modelserver/gpu/vllm/base/kustomization.yaml"] = base.replace(
        "  - name: REPLACE_IMAGE\n    newName: vllm/vllm-openai\n    newTag: \"v0.1.0\"\n", "  []\n").replace("images:\n  []\n", "")
    files["guides/placeholder/modelserver/gpu/vllm/gke/kustomization.yaml"] += (
        "images:\n  - name: REPLACE_IMAGE\n    newName: vllm/vllm-openai\n    newTag: v0.1.0\n")
    tree = write_tree(tmp_path / "llm-d", files)
    with pytest.raises(OverlayBuildingBlock) as raised:
        render(RenderRequest(guide="placeholder", hardware="nvidia", overlay="base"), root=tree)
    assert "it renders the placeholder image REPLACE_IMAGE, which they fill" in raised.value.message
    gke = render(RenderRequest(guide="placeholder", hardware="nvidia", overlay="gke", mode="plugin"), root=tree)
    assert placeholder_images(gke.objects) == []


# -- the real tree ------------------------------------------------------------------------------

#: read from the upstream files at 7edda66: each is only ever a `resources:` entry of the overlays
#: its guide's README applies (tiered-prefix-cache, wide-ep-lws and vllm-deepseek-v4/README.md)
UPSTREAM_BLOCKS = ["guides/tiered-prefix-cache/modelserver/gpu/vllm/base",
                   "guides/tiered-prefix-cache/modelserver/gpu/sglang/base",
                   "guides/tiered-prefix-cache/modelserver/tpu/base/vllm",
                   "guides/wide-ep-lws/modelserver/gpu/vllm/base",
                   "guides/wide-ep-lws/modelserver/gpu/vllm-deepseek-v4/base",
                   "guides/wide-ep-lws/modelserver/gpu/vllm-deepseek-v4/providers/oci"]
#: bases the READMEs apply (`export INFRA_PROVIDER=base  # base | gke`)
UPSTREAM_DOCUMENTED_BASES = ["guides/tiered-prefix-cache/modelserver/gpu/vllm/native/cpu/base",
                             "guides/tiered-prefix-cache/modelserver/gpu/vllm/lmcache-connector/cpu/base",
                             "guides/optimized-baseline/modelserver/gpu/vllm/base"]


@pytest.mark.skipif(ROOT is None, reason="no llm-d tree: ../shared/upstream/llm-d is absent and $LENS_LLM_D_ROOT is unset")
def test_the_upstream_building_blocks_are_marked_and_documented_bases_are_not() -> None:
    rows = {r["path"]: r for r in describe_guides(root=ROOT)["overlays"]}
    present = [p for p in UPSTREAM_BLOCKS if p in rows]
    assert present, "none of the expected building blocks is in this llm-d tree"
    for path in present:
        assert rows[path]["status"] == "building-block", rows[path]
    for path in UPSTREAM_DOCUMENTED_BASES:
        if path in rows:
            assert rows[path]["status"] == "ok", rows[path]


@needs_real_kustomize
@pytest.mark.skipif(ROOT is None, reason="no llm-d tree: ../shared/upstream/llm-d is absent and $LENS_LLM_D_ROOT is unset")
def test_upstream_building_blocks_are_not_among_the_choices() -> None:
    if ROOT is None or not (ROOT / "guides/tiered-prefix-cache/modelserver/gpu/vllm/base").is_dir():
        pytest.skip("guides/tiered-prefix-cache is not in this llm-d tree")
    with pytest.raises(OverlayAmbiguous) as raised:
        render(RenderRequest(guide="tiered-prefix-cache", hardware="nvidia", model_server="vllm"), root=ROOT, runner=MemoRunner())
    offered = raised.value.details["overlays"]
    assert "base" not in offered and "native/cpu/base" in offered
