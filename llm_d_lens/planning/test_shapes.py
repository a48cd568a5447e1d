"""Shapes on constructed pools whose answers are worked out by hand: the formulas, the ranking, the guides."""

from __future__ import annotations

import msgspec

import pytest

from llm_d_lens.planning import shapes
from llm_d_lens.planning.catalogue import catalogue_spec
from llm_d_lens.planning.cost import Prices
from llm_d_lens.planning.fit import FitRequest, Option
from llm_d_lens.planning.pools import Pool, PoolNode
from llm_d_lens.planning.predictions import Targets
from llm_d_lens.planning.test_roofline import DEVICE, model

GIB = 2**30


def pool(profile="vendor-a", product="Device A", devices=8, nodes=1):
    return Pool(profile, profile, profile, product, 80 * GIB, "test",
                [PoolNode(f"n{i}", devices, devices, devices, True) for i in range(nodes)])


def tp2():
    """A fitting TP=2 option: 8e9 B of weights a device, 65,536 B of KV a token a device."""
    return Option(2, 1, feasible=True, fits=True, reason="fits", weights_bytes=8e9, kv_per_token_bytes=65536)


REQUEST = FitRequest(context=2048, concurrency=16, dtype="bf16", kv_dtype="bf16")
TARGETS = Targets(isl=1000, osl=100, ttft_ms=1000.0, tpot_ms=50.0).checked()

# By hand, for ISL 1000, OSL 100, batch 16 on DEVICE (see test_roofline for each term):
PREFILL_MS = 8.0 + 1.31072  # compute 8 ms + all-reduce 1.31072 ms
# decode at the mean length 1000 + 100/2 = 1050: (8e9 + 16 x 1050 x 65,536 B) / 2000e9 = 4.5505024 ms,
# + compute 2 x 8e9 x 16 / (2 x 1000e12) = 0.128 ms (a decode step adds them) + all-reduce 0.02097152 ms
STEP_MS = 4.5505024 + 0.128 + 0.02097152


def context():
    return shapes.Context(model(), REQUEST, TARGETS, pool(), DEVICE)


def test_aggregated_tpot_carries_the_batch_prefills():
    shape = shapes.aggregated(context(), tp2())
    assert shape.ttft_s * 1e3 == pytest.approx(PREFILL_MS)
    # TPOT = step + 16 x prefill / 100 = 4.69947392 + 1.4897152 = 6.18918912 ms
    assert shape.tpot_s * 1e3 == pytest.approx(6.18918912)
    # requests a second: 16 / (16 x 9.31072 ms + 100 x 4.69947392 ms) = 16 / 0.618918912 s = 25.85153
    assert shape.requests_per_s == pytest.approx(25.85153, rel=1e-5)
    assert shape.guide == "optimized-baseline"


def test_disaggregated_adds_the_kv_hand_over_and_is_bound_by_its_slower_side():
    shape = shapes.disaggregated(context(), tp2(), (1, 1))
    # TTFT = 9.31072 ms + 1000 tokens x 131,072 B / 50e9 scale-out (2.62144 ms) = 11.93216 ms
    assert shape.ttft_s * 1e3 == pytest.approx(11.93216)
    assert shape.tpot_s * 1e3 == pytest.approx(STEP_MS)
    # prefill: 1 / 9.31072 ms = 107.4 requests a second; decode: 16 / (100 x 4.57147392 ms) = 35.0: decode binds
    assert shape.requests_per_s == pytest.approx(16 / (100 * STEP_MS / 1e3))
    assert (shape.devices, shape.guide) == (4, "pd-disaggregation")


def test_a_tight_tpot_ranks_the_disaggregated_shape_first_and_the_cheaper_pool_first():
    tight = msgspec.structs.replace(TARGETS, tpot_ms=5.0)  # aggregated (6.19 ms) misses, P/D (4.70 ms) meets
    cheap, dear = pool("vendor-a", "Device A", nodes=2), pool("vendor-b", "Device B", nodes=2)
    prices = Prices({"vendor-a": 1.0, "vendor-b": 2.0})
    found = shapes.search(model(), REQUEST, tight, [(cheap, [tp2()]), (dear, [tp2()])],
                          {cheap.name: DEVICE, dear.name: DEVICE}, prices)
    ranked = found["ranked"]
    # two nodes of 8 hold every ratio's TP2 pods: 5 P/D shapes on each pool meet, the aggregated ones miss
    assert [s["meets"] for s in ranked].index(False) == 10
    assert ranked[0]["kind"] == "disaggregated" and ranked[0]["pool"] == cheap.name
    # the cheapest P/D balances its sides. Each decode pod serves 16 / (100 x 4.69947392 ms) = 34.05 req/s, a prefill
    # pod 1 / 9.31072 ms = 107.4. All devices' cost a million output tokens at $1 a device-hour:
    #   1P:3D min(107.4, 102.14) = 102.14 on 8 devices: 8 / (102.14 x 100 x 3600) x 1e6 = $0.2176  <- cheapest
    #   1P:2D 68.1 on 6: $0.2448; 1P:4D 107.4 on 10: $0.2586; 1P:1D 34.05 on 4: $0.3264; 2P:1D 34.05 on 6: $0.4895
    assert (ranked[0]["prefill_workers"], ranked[0]["decode_workers"]) == (1, 3)
    assert [(s["prefill_workers"], s["decode_workers"]) for s in ranked if s["pool"] == cheap.name and s["meets"]] == [
        (1, 3), (1, 2), (1, 4), (1, 1), (2, 1)]
    assert ranked[0]["cost_per_million_output_all_devices"] == pytest.approx(0.2176, abs=1e-4)
    # the same shape on the pool twice the price is ranked after it, at twice the cost
    twin = next(s for s in ranked if s["pool"] == dear.name and (s["prefill_workers"], s["decode_workers"]) == (1, 3))
    assert twin["cost_per_million_output_all_devices"] == pytest.approx(2 * ranked[0]["cost_per_million_output_all_devices"],
                                                                        rel=1e-3)
    assert ranked.index(twin) > 0 and found["best"]["pool"] == cheap.name
    misses = next(s for s in ranked if not s["meets"])["misses"]
    assert misses == ["TPOT 6.19 ms > 5 ms"]
    assert found["best"]["hand_off"]["deploy"] == ("lens deploy render --guide pd-disaggregation --hardware vendor-a "
                                                   "--tensor-parallel 2 --max-model-len 2048 --replicas 1")


def test_a_pool_too_small_for_a_ratio_skips_it_and_a_pool_without_figures_is_said():
    small = pool(devices=4)
    found = shapes.search(model(), REQUEST, TARGETS, [(small, [tp2()]), (pool("vendor-c", "C"), [tp2()])],
                          {small.name: DEVICE, "vendor-c/C": None}, Prices())
    ratios = {(s["prefill_workers"], s["decode_workers"]) for s in found["ranked"] if s["kind"] == "disaggregated"}
    assert ratios == {(1, 1)}  # 2:1, 1:2, 1:3 and 1:4 need 6 to 10 devices of TP2
    assert any("vendor-c/C: no roofline" in n and "planning.performance" in n for n in found["notes"])
    assert all(s["cost_per_hour"] is None for s in found["ranked"])  # no prices: ranked by throughput a device


def test_wide_ep_is_searched_for_moe_models_only():
    dense = shapes.pool_shapes(model(), REQUEST, TARGETS, pool(), [tp2()], DEVICE, Prices())[0]
    assert {s.kind for s in dense} == {"aggregated", "disaggregated"}
    moe = catalogue_spec("qwen3-30b-a3b")
    request = FitRequest(context=2048, concurrency=8).checked(moe)
    tp1 = Option(1, 1, feasible=True, fits=True, reason="fits", weights_bytes=61e9, kv_per_token_bytes=98304,
                 activation_bytes=2 * GIB, non_torch_bytes=0.5 * GIB)
    found, _ = shapes.pool_shapes(moe, request, TARGETS, pool(), [tp1], DEVICE, Prices())
    wide = [s for s in found if s.kind == "wide-ep"]
    assert [s.expert_parallel for s in wide] == [8] and wide[0].guide == "wide-ep-lws"
    # each device holds everything but the experts, plus an eighth of them: less than the TP=1 replica's whole model
    assert wide[0].terms["weights_per_device_gib"] < 61e9 / GIB
