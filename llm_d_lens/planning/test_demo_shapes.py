"""Issue 32 on the demo cluster: `lens plan --model llama-3.1-70b --ttft 1000 --tpot 50 --demo` ranks shapes on every
pool of whole devices, and each shape's hand-off renders with the real kustomize against the shared llm-d tree
(``../shared/upstream/llm-d`` or ``$LENS_LLM_D_ROOT``); a guide that tree lacks is skipped, naming it."""

from __future__ import annotations

import json
import shlex
from functools import lru_cache

import pytest
import yaml

from llm_d_lens.cli.app import main
from llm_d_lens.deploy.conftest import needs_kustomize
from llm_d_lens.deploy.engines import model_of_container
from llm_d_lens.deploy.test_conformance import ROOT
from llm_d_lens.k8s.engine import stated_flags

ARGV = ["plan", "--model", "llama-3.1-70b", "--ttft", "1000", "--tpot", "50", "--demo", "--no-predict", "-o", "json"]


@lru_cache(maxsize=1)
def planned() -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(ARGV) == 0
    return out.getvalue()


def document() -> dict:
    return json.loads(planned())


def test_the_targets_alone_search_shapes_on_every_pool_of_whole_devices():
    data = document()
    whole = {p["pool"] for p in data["pools"] if not p["partition"]}
    per_pool = {s["pool"]: s for s in data["shapes"]["best_per_pool"]}
    assert whole == set(per_pool), f"pools without a shape: {sorted(whole - set(per_pool))}"
    for shape in per_pool.values():
        assert shape["guide"] in ("optimized-baseline", "pd-disaggregation", "wide-ep-lws")
        assert shape["ttft_ms"] and shape["tpot_ms"] and shape["hand_off"]["deploy"].startswith("lens deploy render ")
    # 140 GB of bf16 weights exceed the TPU node's 4 x 32 GiB: its shapes are int8 ones, and say so
    tpu = per_pool["google-tpu/tpu-v6e-slice"]
    assert tpu["weights_dtype"] == "int8" and any("int8" in n and "fit no option" in n for n in tpu["notes"])
    assert "--overlay v6" in tpu["hand_off"]["deploy"]  # the profile's product_overlays: v6 and v7 share the guide
    # Max 1550 now has a peak FLOP/s fact, so it is estimated rather than left out
    assert per_pool["intel-xpu/Max 1550"]["estimate"] == "roofline"
    # the MIG slice cannot hold the model (one partition a pod), and the plan says so
    assert any("mig-1g.10gb" in n and "no shape searched" in n for n in data["shapes"]["notes"])


def _first(hardware: str, kind: str) -> dict | None:
    return next((s for s in document()["shapes"]["ranked"] if s["profile_id"] == hardware and s["kind"] == kind), None)


@pytest.mark.skipif(ROOT is None, reason="no llm-d tree: ../shared/upstream/llm-d is absent and $LENS_LLM_D_ROOT is unset")
@needs_kustomize
@pytest.mark.parametrize("kind", ["aggregated", "disaggregated"])
@pytest.mark.parametrize("hardware", ["nvidia", "amd", "intel-gaudi", "intel-xpu", "google-tpu"])
def test_each_pools_shape_hand_off_renders(hardware, kind, capsys):
    shape = _first(hardware, kind)
    if shape is None and kind == "disaggregated":
        pytest.skip(f"the demo's {hardware} pool holds no prefill and decode pod pair (TPU: one node of 4 chips, TP4)")
    assert shape is not None, f"the demo ranks no {kind} shape on {hardware}"
    if not (ROOT / "guides" / shape["guide"]).is_dir():
        pytest.skip(f"the llm-d tree at {ROOT} has no guides/{shape['guide']} (the shared snapshot holds "
                    "optimized-baseline, wide-ep-lws and tiered-prefix-cache only)")
    argv = shlex.split(shape["hand_off"]["deploy"])
    assert argv[:3] == ["lens", "deploy", "render"]
    capsys.readouterr()
    assert main([*argv[1:], "--llm-d-root", str(ROOT)]) == 0
    rendered = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    containers = [c for d in rendered if d.get("kind") in ("Deployment", "LeaderWorkerSet")
                  for c in (d["spec"].get("template") or d["spec"]["leaderWorkerTemplate"]["workerTemplate"])["spec"]["containers"]
                  if model_of_container(c)]
    assert containers, "the render holds no model server"
    assert {model_of_container(c) for c in containers} == {"meta-llama/Llama-3.1-70B"}
    assert {stated_flags(c).get("tp", ("", "1"))[1] for c in containers} == {str(shape["tensor_parallel"])}
