"""The memory fit, checked against arithmetic done by hand in each test (not by the code under test)."""

from __future__ import annotations

import pytest

from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.planning.catalogue import catalogue_spec
from llm_d_lens.planning.errors import RequestInvalid
from llm_d_lens.planning.fit import FitRequest, parallelisms
from llm_d_lens.planning.service import plan, plan_for_overview

GIB = 2**30


def option(pool_plan, tp, pp=1):
    return next(o for o in pool_plan.options if (o.tensor_parallel, o.pipeline_parallel) == (tp, pp))


def test_llama_8b_on_an_80_gib_device_by_hand(make_node, make_overview):
    cluster = make_overview(make_node("n1", "gpu", 8, 80, allocated=3))
    result = plan_for_overview(catalogue_spec("llama-3.1-8b"), FitRequest(context=8192, concurrency=4), cluster)
    single = option(result.pools[0], 1)
    # weights: 8,030,261,248 x 2 bytes = 14.96 GiB; requested 80 x 0.9 = 72 GiB
    # activation (80 GiB >= 70: vLLM's 8192 tokens, 1024 seqs): 1024 x 128256 x 38.2 B + 8192 x 4096 x 2.7 B
    #   = 5,107,561,267 B = 4.757 GiB; non-torch: the "gpu" profile is unknown, generic 0.5 GiB
    # KV budget 72 - 14.957 - 4.757 - 0.5 = 51.786 GiB; a sequence of 8192 tokens x 128 KiB = 1 GiB -> 51
    assert single.weights_bytes == 8030261248 * 2
    assert single.kv_per_token_bytes == 131072
    assert single.activation_bytes == pytest.approx(5_107_561_267, abs=1)
    assert single.non_torch_bytes == 0.5 * GIB
    assert single.max_concurrency == 51
    assert single.headroom_bytes / GIB == pytest.approx(47.786, abs=0.001)
    assert single.fits and result.pools[0].best is single
    assert (single.replicas_free, single.replicas_total) == (5, 8)  # 5 devices free of 8
    assert [t.name for t in single.terms] == ["requested", "weights", "activation_peak", "non_torch", "captured_graphs"]


def test_tensor_parallel_splits_kv_heads_until_each_rank_holds_one(make_node, make_overview):
    cluster = make_overview(make_node("n1", "gpu", 16, 80))
    pool = plan_for_overview(catalogue_spec("llama-3.1-8b"), FitRequest(), cluster).pools[0]
    # 8 KV heads: TP=8 keeps one a rank (32 x 2 x 1 x 128 x 2 = 16 KiB); TP=16 replicates, still one
    assert option(pool, 8).kv_per_token_bytes == 16384
    assert option(pool, 16).kv_per_token_bytes == 16384
    # PP=2 halves the layers a stage keeps
    assert option(pool, 1, 2).kv_per_token_bytes == 65536


def test_a_split_the_engine_cannot_make_is_marked_and_never_fits(make_node, make_overview):
    cluster = make_overview(make_node("n1", "gpu", 8, 80))
    pool = plan_for_overview(catalogue_spec("qwen2.5-7b"), FitRequest(), cluster).pools[0]
    eight = option(pool, 8)
    assert not eight.feasible and not eight.fits and "28 attention heads" in eight.reason


def test_fp8_block_checkpoint_counts_scales_and_keeps_16_bit_groups(make_node, make_overview):
    deepseek = catalogue_spec("deepseek-v3")  # fp8 with a float32 scale per 128 x 128 block
    cluster = make_overview(make_node("h200", "gpu", 8, 141, product="H200"), make_node("h100", "gpu", 8, 80, product="H100"))
    result = plan_for_overview(deepseek, FitRequest(context=4096), cluster)
    by_product = {p.pool.product: p for p in result.pools}
    # linear weights: attention 61 x 187,107,328 + 3 dense MLPs x 3 x 7168 x 18432
    #   + 58 MoE layers x 257 experts x 3 x 7168 x 2048 = 669,065,734,144 at 1 + 4/16384 bytes, over 8 ranks;
    # embeddings + LM head 2 x 129280 x 7168 at 2 bytes over 8; router 58 x 7168 x 256 and norms whole, 2 bytes
    linear = (61 * 187_107_328 + 3 * 3 * 7168 * 18432 + 58 * 257 * 3 * 7168 * 2048) * (1 + 4 / 16384) / 8
    ends = 2 * 129280 * 7168 * 2 / 8
    whole = (58 * 7168 * 256 + 61 * 2 * 7168 + 7168) * 2
    assert option(by_product["H200"], 8).weights_bytes == pytest.approx(linear + ends + whole, rel=1e-9)
    assert by_product["H200"].best is not None and by_product["H200"].best.width == 8
    # 78.5 GiB of weights a device + 4.9 GiB activation peak + runtime > 72 GiB on an 80 GiB device
    assert by_product["H100"].best is None and "nothing fits, because" in by_product["H100"].verdict()
    # MLA: the latent (512 + 64 values a layer) is on every TP rank, in bf16
    assert option(by_product["H200"], 8).kv_per_token_bytes == 61 * 576 * 2
    bf16 = plan_for_overview(deepseek, FitRequest(context=4096, dtype="bf16"), cluster)
    linear_bf16 = (61 * 187_107_328 + 3 * 3 * 7168 * 18432 + 58 * 257 * 3 * 7168 * 2048) * 2 / 8
    assert option(bf16.pools[0], 8).weights_bytes == pytest.approx(linear_bf16 + ends + whole, rel=1e-9)


def test_unknown_device_memory_is_not_guessed(make_node, make_overview):
    result = plan_for_overview(catalogue_spec("llama-3.2-1b"), FitRequest(), make_overview(make_node("n1", "gpu", 4, None)))
    pool = result.pools[0]
    assert pool.best is None and pool.verdict() == "cannot judge: device memory unknown"
    assert "device memory unknown" in pool.pool.notes[0]


def test_a_cluster_without_accelerators_says_nothing_fits_and_why(make_node, make_overview):
    result = plan_for_overview(catalogue_spec("llama-3.2-1b"), FitRequest(),
                               make_overview(make_node("cpu1", "cpu", 2, None), accelerator=False))
    assert result.pools == [] and any("no accelerator devices" in n for n in result.notes)


@pytest.mark.parametrize("request_,field", [
    (FitRequest(context=0), "context"), (FitRequest(concurrency=10**12), "concurrency"),
    (FitRequest(context=True), "context"), (FitRequest(context=200_000), "context"),
    (FitRequest(dtype="fp7"), "dtype"), (FitRequest(memory_utilization=1.5), "memory_utilization"),
    (FitRequest(overhead_gib=float("nan")), "overhead_gib"),
])
def test_impossible_requests_are_coded_errors(request_, field):
    with pytest.raises(RequestInvalid) as caught:
        request_.checked(catalogue_spec("llama-3.1-8b"))
    assert caught.value.details["field"] == field


def test_parallelisms_stay_within_one_node():
    assert parallelisms(4) == [(1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (4, 1)]
    assert (6, 1) in parallelisms(6) and all(tp * pp <= 6 for tp, pp in parallelisms(6))
    assert parallelisms(0) == []


def test_the_demo_cluster_plans_every_vendor_pool():
    result = plan(catalogue_spec("llama-3.1-70b"), FitRequest(context=8192, concurrency=16), ClusterSource(demo=True))
    pools = {p.pool.name: p for p in result.pools}
    assert {p.pool.profile_id for p in result.pools} == {"nvidia", "amd", "intel-gaudi", "intel-xpu", "google-tpu"}
    h100 = pools["nvidia/NVIDIA-H100-80GB-HBM3"]
    # the MIG node offers 4 whole GPUs (2 free), the other ready H100 node 8 (2 free), the NotReady one none
    assert {n.name: (n.whole_devices, n.free_devices) for n in h100.pool.nodes} == {
        "gpu-h100-01": (8, 2), "gpu-h100-mig-01": (4, 2), "gpu-h100-02": (8, 0)}
    assert h100.best.width == 4 and h100.best.replicas_free == 0 and h100.best.replicas_total == 3
    assert pools["intel-gaudi/Gaudi3"].pool.memory_source == "memory-model:Gaudi3"
    assert pools["intel-gaudi/Gaudi3"].best.replicas_free == 3  # 6 free Gaudi 3 devices, TP=2
    assert pools["google-tpu/tpu-v6e-slice"].best is None  # 4 x 32 GiB cannot hold 131 GiB of weights
    assert pools["intel-gaudi/Gaudi3"].to_dict()["hand_off"]["deploy"].endswith(
        "--hardware intel-gaudi --tensor-parallel 2 --replicas 3")  # the render's count follows the TP


def test_a_bad_request_is_refused_before_the_cluster_is_read():
    class Exploding:
        def load(self, runner=None):
            raise AssertionError("the cluster was read")

    with pytest.raises(RequestInvalid):
        plan(catalogue_spec("llama-3.1-8b"), FitRequest(context=0), Exploding())
