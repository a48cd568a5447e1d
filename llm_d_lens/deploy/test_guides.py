"""A guide as a whole: which directories are guides, its router values, monitoring, manifests and helpers.

The fixture adds, to the small tree, a guide with a router directory (one values file per engine
and one per connector), companion manifests, a monitoring Kustomization, a helper overlay that
pulls in the checkout's ``helpers/`` and a README that applies a second helper; a guide with no
model-server overlays at all; and a folder inside a guide that must not be taken for a guide.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_d_lens.deploy.conftest import FILES, GPU_LIMITS, needs_kustomize, overlay, write_tree
from llm_d_lens.deploy.errors import DeployRequestInvalid, OverlayAmbiguous
from llm_d_lens.deploy.service import RenderRequest, describe_guides, render
from llm_d_lens.deploy.source import LlmdSource
from llm_d_lens.deploy.guides import guide_names
from llm_d_lens.deploy.test_conformance import ROOT

G = "guides/cache/modelserver/gpu/vllm"
HELPER = "resources:\n  - ../../../../../../../../helpers/kv-client/base\n"
README = """\
# Cache guide

```bash
kubectl apply -k ${REPO_ROOT}/helpers/kv-master/base/
kubectl apply -n ${NAMESPACE} -k ${REPO_ROOT}/guides/cache/modelserver/gpu/vllm/kv/fs/base
```
"""


@pytest.fixture
def guide_tree(tmp_path: Path) -> Path:
    gpu = overlay("gpu", "nvidia", up=7, image="vllm/vllm-openai:v0.1.0", resources=GPU_LIMITS)
    files = {
        **FILES,
        f"{G}/kv/fs/base/kustomization.yaml": gpu.replace("llm-d.ai/guide: demo", "llm-d.ai/guide: cache\n      llm-d.ai/model: Qwen3-32B"),
        f"{G}/kv/fs/kv-client/kustomization.yaml": HELPER,
        f"{G}/native/cpu/base/kustomization.yaml": gpu,
        "guides/cache/README.md": README,
        "guides/cache/router/cache.values.yaml": "{}\n",
        "guides/cache/router/cache-cpu.values.yaml": "{}\n",
        "guides/cache/manifests/pvc.yaml": "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: cache\n",
        "guides/cache/manifests/notes.md": "not a manifest\n",
        "guides/cache/monitoring/kustomization.yaml": "resources: []\n",
        "guides/recipes/router/base.values.yaml": "{}\n",
        "helpers/kv-client/base/kustomization.yaml": "resources: []\n",
        "helpers/kv-master/base/kustomization.yaml": "resources: []\n",
        "guides/autoscaling/README.md": "# no model servers of its own\n",
        "guides/autoscaling/config/kustomization.yaml": "resources: []\n",
        "guides/demo/manifests/README.md": "# a folder of the demo guide\n",
    }
    return write_tree(tmp_path / "llm-d", files)


def test_guides_are_found_and_recipes_and_folders_inside_a_guide_are_not(guide_tree: Path) -> None:
    source = LlmdSource(guide_tree.resolve(), str(guide_tree))
    assert guide_names(source) == ["autoscaling", "cache", "demo", "flat-tpu", "serving/multimodal"]
    report = describe_guides(root=guide_tree)
    assert report["guides"] == ["autoscaling", "cache", "demo", "flat-tpu", "serving/multimodal"]
    assert "recipes" not in {o["guide"] for o in report["overlays"]} | {u["guide"] for u in report["unsupported"]}


def test_a_guide_without_model_server_overlays_is_listed_not_guide_not_found(guide_tree: Path) -> None:
    report = describe_guides(root=guide_tree, guide="autoscaling")
    assert report["overlays"] == []
    (contents,) = report["contents"]
    assert contents["other"] == ["guides/autoscaling/config"]


def test_the_listing_says_what_a_guide_holds_besides_its_overlays(guide_tree: Path) -> None:
    report = describe_guides(root=guide_tree, guide="cache")
    (contents,) = report["contents"]
    assert contents == {
        "guide": "cache",
        "router_values": ["guides/cache/router/cache-cpu.values.yaml", "guides/cache/router/cache.values.yaml"],
        "monitoring": ["guides/cache/monitoring"],
        "manifests": ["guides/cache/manifests/pvc.yaml"],
        "helpers": [f"{G}/kv/fs/kv-client", "helpers/kv-master/base"],
        "other": [],
        "shared": [],
    }
    rows = {r["overlay"]: r for r in report["overlays"]}
    assert rows["kv/fs/kv-client"]["status"] == "helper"  # never an alternative overlay
    assert rows["kv/fs/kv-client"]["detail"] == (
        "deploys helpers/kv-client/base, a companion of the guide's overlays, not a model server")
    assert rows["kv/fs/base"]["model"] == "Qwen3-32B"
    assert report["shared"]["router_base"] == "guides/recipes/router/base.values.yaml"


def test_a_helper_is_not_offered_and_not_rendered_as_an_overlay(guide_tree: Path) -> None:
    with pytest.raises(OverlayAmbiguous) as raised:
        render(RenderRequest(guide="cache", hardware="nvidia"), root=guide_tree)
    assert raised.value.details["overlays"] == ["kv/fs/base", "native/cpu/base"]
    with pytest.raises(DeployRequestInvalid, match="deploys helpers/kv-client/base, a companion"):
        render(RenderRequest(guide="cache", hardware="nvidia", overlay="kv/fs/kv-client"), root=guide_tree)


@needs_kustomize
def test_render_names_the_router_values_and_the_companions(guide_tree: Path) -> None:
    kv = render(RenderRequest(guide="cache", hardware="nvidia", overlay="kv/fs/base", mode="plugin"), root=guide_tree)
    assert kv.router_values == ["guides/recipes/router/base.values.yaml", "guides/cache/router/cache.values.yaml"]
    # the helper beside kv/fs serves the overlays below kv/fs; helpers/kv-master, which the README applies, those named kv
    assert kv.companions == ["guides/cache/manifests/pvc.yaml", "guides/cache/monitoring", f"{G}/kv/fs/kv-client",
                             "helpers/kv-master/base"]
    assert (kv.engine, kv.model) == ("vllm", "Qwen3-32B")  # the engine from the rendered image, the model from its label
    assert "router: helm values guides/recipes/router/base.values.yaml, guides/cache/router/cache.values.yaml" in kv.explanation()
    cpu = render(RenderRequest(guide="cache", hardware="nvidia", overlay="native/cpu/base", mode="plugin"), root=guide_tree)
    assert cpu.router_values[-1] == "guides/cache/router/cache-cpu.values.yaml"  # its extra word names the overlay
    assert cpu.companions == ["guides/cache/manifests/pvc.yaml", "guides/cache/monitoring"]
    report = kv.to_dict(objects=False)
    assert report["companions"] == kv.companions and report["model"] == "Qwen3-32B"


# -- the real tree --------------------------------------------------------------------------------


@pytest.mark.skipif(ROOT is None, reason="no llm-d tree: ../shared/upstream/llm-d is absent and $LENS_LLM_D_ROOT is unset")
def test_upstream_guides_and_their_contents() -> None:
    report = describe_guides(root=ROOT)
    assert "recipes" not in report["guides"]
    contents = {c["guide"]: c for c in report["contents"]}
    if "tiered-prefix-cache" in contents:
        tiered = contents["tiered-prefix-cache"]
        assert "guides/tiered-prefix-cache/manifests/pvc.yaml" in tiered["manifests"]
        # read from tiered-prefix-cache/README.md at 7edda66: `kubectl apply -k ${REPO_ROOT}/helpers/mooncake-master-store/base/`
        # is only counted when the helper exists in this tree
        helper = "guides/tiered-prefix-cache/modelserver/gpu/vllm/mooncake-store/fs/mooncake-client"
        rows = {o["path"]: o for o in report["overlays"]}
        assert rows[helper]["status"] == "helper"
        assert helper in tiered["helpers"]
    if "wide-ep-lws" in contents:
        assert contents["wide-ep-lws"]["router_values"] == ["guides/wide-ep-lws/router/wide-ep-lws.values.yaml"]
        assert contents["wide-ep-lws"]["monitoring"] == ["guides/wide-ep-lws/monitoring"]
    models = {(o["guide"], o["path"].rsplit("/modelserver/", 1)[1]): o["model"] for o in report["overlays"] if o["status"] == "ok"}
    if ("wide-ep-lws", "gpu/vllm/gke") in models:  # one guide, different models per overlay family
        assert models[("wide-ep-lws", "gpu/vllm/gke")] == "DeepSeek-R1-0528"
        assert models[("wide-ep-lws", "gpu/vllm-deepseek-v4/deployments/oci-high-tpt")] == "DeepSeek-V4-Pro"


@needs_kustomize
@pytest.mark.skipif(ROOT is None, reason="no llm-d tree: ../shared/upstream/llm-d is absent and $LENS_LLM_D_ROOT is unset")
def test_an_upstream_render_pairs_with_its_router_values() -> None:
    if ROOT is None or not (ROOT / "guides/tiered-prefix-cache/router").is_dir():
        pytest.skip("guides/tiered-prefix-cache/router is not in this llm-d tree")
    result = render(RenderRequest(guide="tiered-prefix-cache", hardware="nvidia", model_server="vllm",
                                  overlay="native/cpu/base", mode="plugin"), root=ROOT)
    assert result.router_values[-1] == "guides/tiered-prefix-cache/router/tiered-prefix-cache-cpu.values.yaml"
    assert (result.engine, result.model) == ("vllm", "Qwen3-32B")
