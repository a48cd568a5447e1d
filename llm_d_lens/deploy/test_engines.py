"""The model server of an overlay is the engine it runs, not the name of its directory.

``pd-disaggregation/modelserver/xpu/vllm-rdma`` and ``wide-ep-lws/modelserver/gpu/vllm-deepseek-v4``
run vLLM: they are listed under vllm with the directory kept in the overlay's name, and
``--model-server vllm`` finds them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_d_lens.deploy.conftest import FILES, XPU_PATCH, needs_kustomize, write_tree
from llm_d_lens.deploy.engines import engine_of_container
from llm_d_lens.deploy.service import RenderRequest, describe_guides, render
from llm_d_lens.deploy.test_conformance import ROOT

RDMA = "resources:\n  - ../vllm\n"
SGLANG_COMMAND = XPU_PATCH.replace("        - name: modelserver\n",
                                   '        - name: modelserver\n          command: ["python3", "-m", "sglang.launch_server"]\n')


@pytest.fixture
def engine_tree(tmp_path: Path) -> Path:
    files = dict(FILES)
    files["guides/demo/modelserver/xpu/vllm/patch.yaml"] = XPU_PATCH.replace(
        "        - name: modelserver\n", '        - name: modelserver\n          command: ["vllm", "serve"]\n')
    files["guides/demo/modelserver/xpu/vllm-rdma/kustomization.yaml"] = RDMA
    return write_tree(tmp_path / "llm-d", files)


def test_the_engine_comes_from_the_command_then_the_image() -> None:
    assert engine_of_container({"command": ["vllm", "serve"], "image": "x"}) == "vllm"
    assert engine_of_container({"command": ["/bin/bash", "-c"], "args": ["exec vllm serve Qwen/Qwen3 --port 8000"]}) == "vllm"
    assert engine_of_container({"command": ["python3", "-m", "sglang.launch_server"]}) == "sglang"
    assert engine_of_container({"command": ["trtllm-serve", "serve"]}) == "trtllm"
    assert engine_of_container({"image": "docker.io/lmsysorg/sglang:v0.5"}) == "sglang"
    assert engine_of_container({"command": ["python3", "server.py"], "image": "example.com/serve:1"}) is None


def test_a_directory_named_after_its_variant_is_listed_under_its_engine(engine_tree: Path) -> None:
    rows = {(r["model_server"], r["overlay"]): r for r in describe_guides(root=engine_tree, guide="demo", hardware="xpu")["overlays"]}
    assert set(rows) == {("vllm", "."), ("vllm", "vllm-rdma")}
    assert rows[("vllm", "vllm-rdma")]["model_server_dir"] == "vllm-rdma"
    assert rows[("vllm", "vllm-rdma")]["path"] == "guides/demo/modelserver/xpu/vllm-rdma"


def test_the_engine_label_wins_over_the_directory(tmp_path: Path) -> None:
    files = dict(FILES)
    files["guides/demo/modelserver/xpu/vllm/patch.yaml"] = SGLANG_COMMAND
    tree = write_tree(tmp_path / "llm-d", files)
    (row,) = describe_guides(root=tree, guide="demo", hardware="xpu")["overlays"]
    assert (row["model_server"], row["overlay"]) == ("sglang", "vllm")  # the command says sglang; the directory is kept


@needs_kustomize
def test_model_server_vllm_finds_an_overlay_in_a_differently_named_directory(engine_tree: Path) -> None:
    by_engine = render(RenderRequest(guide="demo", hardware="xpu", model_server="vllm", overlay="vllm-rdma"), root=engine_tree)
    assert by_engine.choice.overlay.path == "guides/demo/modelserver/xpu/vllm-rdma"
    by_directory = render(RenderRequest(guide="demo", hardware="xpu", model_server="vllm-rdma"), root=engine_tree)
    assert by_directory.choice.overlay.path == "guides/demo/modelserver/xpu/vllm-rdma"
    default = render(RenderRequest(guide="demo", hardware="xpu"), root=engine_tree)
    assert default.choice.overlay.path == "guides/demo/modelserver/xpu/vllm"  # the flat one of the engine's overlays


@pytest.mark.skipif(ROOT is None, reason="no llm-d tree: ../shared/upstream/llm-d is absent and $LENS_LLM_D_ROOT is unset")
def test_upstream_engines_are_read_from_the_overlays() -> None:
    rows = describe_guides(root=ROOT)["overlays"]
    engines = {r["model_server"] for r in rows}
    assert engines <= {"vllm", "sglang", "trtllm"}, engines  # no directory names such as vllm-deepseek-v4
    deepseek = [r for r in rows if r["model_server_dir"] == "vllm-deepseek-v4" and r["status"] == "ok"]
    if not deepseek:
        pytest.skip("guides/wide-ep-lws/modelserver/gpu/vllm-deepseek-v4 is not in this llm-d tree")
    assert all(r["model_server"] == "vllm" and r["overlay"].startswith("vllm-deepseek-v4/") for r in deepseek)
