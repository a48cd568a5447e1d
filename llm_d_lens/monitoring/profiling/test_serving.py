"""vLLM beyond the KV cache, per pod, through a real Prometheus: token throughput, preemptions, the
prefix-cache hit ratio and latency quantiles, across the metric renames of recent releases.

Counters and histogram buckets are backfilled every 15 s for five minutes, each rising at a fixed
rate, so every rate and quantile below is worked out by hand from those slopes.
"""

from __future__ import annotations

import asyncio

import pytest

from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.monitoring.profiling.pods import metric_names, read_pods
from llm_d_lens.testing.telemetry_pages import needs_prometheus
from llm_d_lens.prometheus.client import PrometheusClient
from llm_d_lens.testing.prometheus import BASE_TIMESTAMP, run_prometheus

STEP, STEPS = 15, 21  # samples at BASE .. BASE + 300 s
END = BASE_TIMESTAMP + STEP * (STEPS - 1)
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def rising(series: list[tuple[str, dict[str, str], float]]) -> str:
    """OpenMetrics of counters rising at ``slope`` per second, one series after another."""
    lines = []
    for name, labels, slope in series:
        rendered = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        lines += [f"{name}{{{rendered}}} {1000 + slope * STEP * i} {BASE_TIMESTAMP + STEP * i}" for i in range(STEPS)]
    return "\n".join(lines) + "\n"


def histogram(name: str, labels: dict[str, str], slopes: dict[str, float]) -> list[tuple[str, dict[str, str], float]]:
    return [(f"{name}_bucket", {**labels, "le": le}, slope) for le, slope in slopes.items()]


def pod(name: str, engine: str = "0") -> dict[str, str]:
    return {"namespace": "llm-serving", "pod": name, "model_name": MODEL, "engine": engine}


@pytest.fixture(scope="module")
def served():
    current, legacy = pod("current-0"), pod("legacy-0")
    series = [
        # 0.11 names: 120 prompt and 30 generated tokens/s, 0.05 preemptions/s, 40 hits of 50 queries per second
        ("vllm:prompt_tokens_total", current, 120.0), ("vllm:generation_tokens_total", current, 30.0),
        ("vllm:num_preemptions_total", current, 0.05),
        ("vllm:prefix_cache_hits_total", current, 40.0), ("vllm:prefix_cache_queries_total", current, 50.0),
        # two engines of one pod: their buckets add up before the quantile (5 + 5 observations/s below 0.1 s)
        *histogram("vllm:time_to_first_token_seconds", current, {"0.05": 0.0, "0.1": 2.5, "0.25": 5.0, "+Inf": 5.0}),
        *histogram("vllm:time_to_first_token_seconds", pod("current-0", "1"), {"0.05": 0.0, "0.1": 2.5, "0.25": 5.0, "+Inf": 5.0}),
        *histogram("vllm:inter_token_latency_seconds", current, {"0.01": 10.0, "0.02": 20.0, "+Inf": 20.0}),
        *histogram("vllm:e2e_request_latency_seconds", current, {"1.0": 1.0, "2.5": 4.0, "+Inf": 4.0}),
        # an older release: the prefix cache counters carried gpu_, inter-token latency was time_per_output_token
        ("vllm:gpu_prefix_cache_hits_total", legacy, 3.0), ("vllm:gpu_prefix_cache_queries_total", legacy, 12.0),
        *histogram("vllm:time_per_output_token_seconds", legacy, {"0.01": 0.0, "0.02": 8.0, "+Inf": 8.0}),
    ]
    with run_prometheus(rising(series) + "# EOF\n") as server:
        async def read():
            async with PrometheusClient(server.url) as client:
                return await read_pods(client, metric_names(get_registry().profiles()), at=END)
        yield {r.pod: r.to_dict() for r in asyncio.run(read())}


@needs_prometheus
def test_token_throughput_and_preemptions_are_per_second_rates(served):
    current = served["current-0"]
    assert current["prompt_tokens_per_second"] == pytest.approx(120.0)
    assert current["generation_tokens_per_second"] == pytest.approx(30.0)
    assert current["preemptions_per_second"] == pytest.approx(0.05)


@needs_prometheus
def test_the_prefix_cache_hit_ratio_pairs_each_generations_names(served):
    assert served["current-0"]["prefix_cache_hit_ratio"] == pytest.approx(40 / 50)
    assert served["legacy-0"]["prefix_cache_hit_ratio"] == pytest.approx(3 / 12)
    assert served["legacy-0"]["metric_names"]["prefix_cache_hit_ratio"] == "vllm:gpu_prefix_cache_hits_total"


@needs_prometheus
def test_latency_quantiles_come_from_the_summed_buckets(served):
    current = served["current-0"]
    # TTFT, both engines: 10 obs/s, 5 of them <= 0.1 s. p50: rank 5 -> the 0.1 bucket's top = 0.1.
    # p99: rank 9.9, in (0.1, 0.25] holding 5 -> 0.1 + 0.15 * (9.9 - 5) / 5
    assert current["time_to_first_token_p50_seconds"] == pytest.approx(0.1)
    assert current["time_to_first_token_p99_seconds"] == pytest.approx(0.1 + 0.15 * 4.9 / 5)
    # ITL: 20 obs/s, 10 <= 0.01 s: p50 = 0.01; p99 rank 19.8 in (0.01, 0.02] -> 0.01 + 0.01 * 9.8 / 10
    assert current["inter_token_latency_p50_seconds"] == pytest.approx(0.01)
    assert current["inter_token_latency_p99_seconds"] == pytest.approx(0.01 + 0.01 * 9.8 / 10)
    # e2e: 4 obs/s, 1 <= 1 s: p50 rank 2 in (1, 2.5] holding 3 -> 1 + 1.5 * 1 / 3
    assert current["e2e_latency_p50_seconds"] == pytest.approx(1 + 1.5 / 3)
    # the older name for inter-token latency: 8 obs/s all in (0.01, 0.02]: p50 -> 0.01 + 0.01 * 4 / 8
    legacy = served["legacy-0"]
    assert legacy["inter_token_latency_p50_seconds"] == pytest.approx(0.015)
    assert legacy["metric_names"]["inter_token_latency_p50_seconds"] == "vllm:time_per_output_token_seconds"
    assert legacy["time_to_first_token_p50_seconds"] is None  # none emitted
