"""AIC predictions: system matching, Lens's strict SLA check and placement, on AIC's real output.

``testdata/aic-catalogue.json`` and ``testdata/aic-qwen3-32b-h200-vllm.json`` were written by
aiconfigurator 0.12.0 itself (``aic.worker_catalogue()`` and ``aic.worker_search("Qwen/Qwen3-32B",
"h200_sxm", 8, "vllm", 4000, 1000, 2000, 30)``, trimmed to the columns Lens reads).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.planning import aic
from llm_d_lens.planning.catalogue import catalogue_spec
from llm_d_lens.planning.errors import PredictionsUnavailable, RequestInvalid
from llm_d_lens.planning.fit import FitRequest
from llm_d_lens.planning.pools import Pool, PoolNode
from llm_d_lens.planning.predictions import (
    SystemFacts,
    Targets,
    aic_model_name,
    best_row,
    copies,
    judge,
    match_system,
    plan_queries,
)
from llm_d_lens.planning.service import plan, start_predictions

DATA = Path(__file__).parent / "testdata"
GIB = 2**30
CATALOGUE = json.loads((DATA / "aic-catalogue.json").read_text())
SYSTEMS = {name: SystemFacts(name, f["backends"], f["memory_bytes"], f["gpus_per_node"]) for name, f in CATALOGUE["systems"].items()}
ANSWER = json.loads((DATA / "aic-qwen3-32b-h200-vllm.json").read_text())


def pool(product: str, memory_gib: float, per_node: int = 8, free: tuple[int, ...] = (8,), profile: str = "nvidia") -> Pool:
    nodes = [PoolNode(f"n{i}", per_node, per_node, f, True) for i, f in enumerate(free)]
    return Pool(profile, profile, "v", product, int(memory_gib * GIB), "test", nodes)


def nvidia():
    return get_registry().get("nvidia")


@pytest.mark.parametrize("product,memory,system", [
    ("NVIDIA H200", 140.4, "h200_sxm"),                 # DRA productName
    ("NVIDIA-H100-80GB-HBM3", 79.6, "h100_sxm"),        # GPU feature discovery label
    ("NVIDIA-GB200", 184.0, "gb200"),                   # GB200 is not taken for B200
    ("NVIDIA-B200", 179.1, "b200_sxm"),
])
def test_the_profiles_ordered_table_picks_the_system(product, memory, system):
    chosen, checks = match_system(pool(product, memory, per_node=4 if "GB" in product else 8), nvidia(), SYSTEMS, "vllm")
    assert chosen == system, checks


def test_a_system_whose_memory_differs_from_the_inventory_is_not_trusted():
    chosen, checks = match_system(pool("NVIDIA H100 NVL", 93.0), nvidia(), SYSTEMS, "vllm")
    assert chosen is None and "is not h100_sxm's 80.0 GiB" in checks[-1]


def test_a_system_missing_from_the_database_or_backend_is_skipped():
    chosen, checks = match_system(pool("NVIDIA-H100-PCIe", 79.6), nvidia(), SYSTEMS, "vllm")
    assert chosen is None and checks[-1] == "AIC's database lists no h100_pcie"
    chosen, checks = match_system(pool("Intel(R) Arc(TM) Pro B60 Graphics", 24.0, per_node=4, profile="intel-xpu"),
                                  get_registry().get("intel-xpu"), SYSTEMS, "trtllm")
    assert chosen is None and "no trtllm data for b60" in checks[-1]


def test_more_devices_a_node_than_the_system_has_is_refused():
    chosen, checks = match_system(pool("NVIDIA H200", 140.4, per_node=16), nvidia(), SYSTEMS, "vllm")
    assert chosen is None and "16 devices a node is more than h200_sxm's 8" in checks[-1]


def test_models_are_asked_by_a_name_aic_ships_or_by_the_users_config_directory(tmp_path):
    known = set(CATALOGUE["models"])
    assert aic_model_name(catalogue_spec("llama-3.1-8b"), known) == "meta-llama/Meta-Llama-3.1-8B"  # an alias
    assert aic_model_name(catalogue_spec("mistral-7b"), known) is None
    from llm_d_lens.planning.catalogue import read_config_file
    from llm_d_lens.planning.test_architecture import LLAMA_8B

    (tmp_path / "config.json").write_text(json.dumps(LLAMA_8B))
    assert aic_model_name(read_config_file(tmp_path), known) == str(tmp_path.resolve())


def test_lens_rejects_near_misses_aic_keeps_on_its_front():
    targets = Targets()
    best, rejected = best_row(ANSWER["agg"], targets)
    # AIC's front holds 1108.8 tok/s/GPU at TPOT 64.4 ms and 919.1 at 30.109 ms: both miss TPOT <= 30
    assert best["tokens/s/gpu"] == 890.761 and best["tpot"] == 26.599 and rejected == 10
    tight, _ = best_row(ANSWER["agg"], Targets(tpot_ms=8.0))
    assert (tight["tokens/s/gpu"], tight["tpot"]) == (309.312, 7.874)
    assert best_row(ANSWER["agg"], Targets(ttft_ms=100.0))[0] is None


def test_a_judged_answer_counts_replicas_on_free_devices_without_spanning_nodes():
    result = judge(ANSWER, Targets(), pool("NVIDIA H200", 140.4, free=(2, 2)))
    agg, disagg = result["aggregated"], result["disaggregated"]
    assert (agg["tensor_parallel"], agg["gpus"], agg["replicas_on_free_devices"]) == (4, 4, 0)  # 2 + 2 free is no TP4 pod
    assert disagg["prefill"] == {"tensor_parallel": 1, "pipeline_parallel": 1, "workers": 4}
    assert disagg["decode"]["tensor_parallel"] == 4 and disagg["tpot_ms"] <= 30
    assert judge(ANSWER, Targets(), pool("NVIDIA H200", 140.4, free=(8, 8)))["aggregated"]["replicas_on_free_devices"] == 4
    none = judge(ANSWER, Targets(ttft_ms=10.0), pool("NVIDIA H200", 140.4))
    assert none["aggregated"] is None and "no configuration AIC found meets TTFT <= 10 ms" in none["verdict"]


def test_copies_place_whole_workers_first_fit():
    assert copies([2, 2], [4]) == 0
    assert copies([8], [4, 1, 1, 1, 1]) == 1
    assert copies([8, 8], [4]) == 4
    assert copies([8, 3], [4, 1, 1, 1, 1]) == 1  # the second set's TP4 worker finds no room
    assert copies([8], []) == 0


def test_pools_without_aic_data_say_why():
    pools = [pool("AMD_Instinct_MI300X_OAM", 192.0, profile="amd"), pool("NVIDIA H200", 140.4)]
    profiles = {p.id: p for p in get_registry().profiles()}
    planned = plan_queries(catalogue_spec("qwen3-32b"), pools, profiles, SYSTEMS, set(CATALOGUE["models"]), Targets())
    assert planned[0].query is None and "amd declares no planning.aic_systems" in planned[0].reason
    assert planned[1].query.system == "h200_sxm" and planned[1].query.model == "Qwen/Qwen3-32B"


@pytest.mark.parametrize("targets,field", [
    (Targets(isl=0), "isl"), (Targets(osl=10**9), "osl"), (Targets(ttft_ms=0), "ttft"),
    (Targets(tpot_ms=float("inf")), "tpot"), (Targets(backend="tensorrt"), "backend"),
])
def test_bad_targets_are_coded(targets, field):
    with pytest.raises(RequestInvalid) as caught:
        targets.checked()
    assert caught.value.details["field"] == field


@pytest.mark.skipif(aic.status().available, reason="aiconfigurator is installed here")
def test_the_engine_refuses_with_the_not_installed_code_and_starts_no_worker():
    engine = aic.Engine()
    with pytest.raises(PredictionsUnavailable) as caught:
        engine.catalogue()
    assert caught.value.code == "PLANNING_AIC_NOT_INSTALLED" and engine._executor is None


@pytest.mark.skipif(not aic.status().available, reason="aiconfigurator is not installed (pip install 'llm-d-lens[planning]')")
def test_real_aic_predicts_the_demos_nvidia_pools_and_caches_the_second_request():
    result = plan(catalogue_spec("qwen3-32b"), FitRequest(), ClusterSource(demo=True))
    engine = aic.Engine()
    try:
        first = start_predictions(result, Targets(), engine).to_dict(wait=True)
        h200 = first["pools"]["nvidia/NVIDIA H200"]
        assert h200["state"] == "predicted" and h200["system"] == "h200_sxm"
        assert h200["aggregated"]["tpot_ms"] <= 30 and h200["aggregated"]["ttft_ms"] <= 2000
        assert first["pools"]["amd/AMD_Instinct_MI300X_OAM"]["state"] == "skipped"
        second = start_predictions(result, Targets(), engine).to_dict(wait=True)
        assert second["pools"]["nvidia/NVIDIA H200"]["cached"] is True
        assert second["pools"]["nvidia/NVIDIA H200"]["aggregated"] == h200["aggregated"]
    finally:
        engine.close()


def test_the_profile_table_is_validated_like_the_other_fields():
    from llm_d_lens.testing.plugins import bundled
    from llm_d_lens.hardware.errors import ProfileInvalid
    from llm_d_lens.hardware.loader import validate_payload

    payload = bundled("nvidia")
    payload["planning"]["aic_systems"] = [{"product_pattern": "(H200", "system": "h200_sxm"},
                                          {"product_pattern": "MI300X", "system": "mi300x"},
                                          {"product_pattern": "H100"}]
    with pytest.raises(ProfileInvalid) as caught:
        validate_payload(payload, "nvidia.json")
    issues = [str(issue) for issue in caught.value.issues]
    assert any(i.startswith("$.planning.aic_systems[2].system") for i in issues), issues
    payload["planning"]["aic_systems"].pop()
    with pytest.raises(ProfileInvalid) as caught:
        validate_payload(payload, "nvidia.json")
    issues = [str(issue) for issue in caught.value.issues]
    assert any(i.startswith("$.planning.aic_systems[0].product_pattern: is not a valid regular expression") for i in issues)
    assert any(i.startswith("$.planning.aic_systems[1].system: matches none of planning.aic_system_patterns") for i in issues)


def test_the_table_shows_each_pools_prediction_and_the_targets():
    from rich.console import Console

    from llm_d_lens.planning.render import plan_renderable

    result = plan(catalogue_spec("qwen3-32b"), FitRequest(), ClusterSource(demo=True))
    h200 = next(p.pool for p in result.pools if p.pool.product == "NVIDIA H200")
    data = result.to_dict()
    data["predictions"] = {"state": "done", "targets": Targets().to_dict(), "message": "AIC predictions",
                           "pools": {h200.name: {"state": "predicted", "system": "h200_sxm", **judge(ANSWER, Targets(), h200)},
                                     "amd/AMD_Instinct_MI300X_OAM": {"state": "skipped", "reason": "amd declares no planning.aic_systems"}}}
    console = Console(width=200, record=True)
    console.print(plan_renderable(data))
    text = console.export_text()
    assert "AIC h200_sxm aggregated: TP4 PP1 DP1 (4 GPUs): 891 tok/s/GPU, 37.6 tok/s/user, TTFT 344 ms, TPOT 26.6 ms" in text
    assert "AIC h200_sxm disaggregated: 4x prefill TP1 + 1x decode TP4 (8 GPUs)" in text
    assert "AIC: skipped: amd declares no planning.aic_systems" in text
    assert "ISL 4000, OSL 1000, TTFT <= 2000 ms, TPOT <= 30 ms, vllm" in text
