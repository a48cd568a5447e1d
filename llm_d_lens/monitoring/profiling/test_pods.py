"""Per-pod serving metrics from a real Prometheus: both KV-cache names, engines, filters, injection."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.monitoring.accelerator.attribution import PodAllocation
from llm_d_lens.monitoring.accelerator.readings import DeviceReading
from llm_d_lens.monitoring.accelerator.service import select
from llm_d_lens.monitoring.profiling.pods import metric_names, read_pods
from llm_d_lens.monitoring.profiling.service import device_figures, read_pod_report
from llm_d_lens.monitoring.test_support import as_stored, backfill, needs_prometheus, sample_text
from llm_d_lens.prometheus.client import PrometheusClient
from llm_d_lens.testing.prometheus import BASE_TIMESTAMP, PrometheusServer, run_prometheus, skip_reason, to_openmetrics

NEW, LEGACY = "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"
ODD_NAMESPACE = 'team"a\\b'  # a label value Prometheus can store; Kubernetes would refuse it, Lens must not care


def vllm_page(pod: str, namespace: str = "llm-serving", rename: dict[str, str] | None = None) -> str:
    text = sample_text("vllm.prom")
    for old, new in (rename or {}).items():
        text = text.replace(old, new)
    return as_stored(text, {"namespace": namespace, "pod": pod})


@pytest.fixture(scope="module")
def vllm_prometheus() -> Iterator[PrometheusServer]:
    """new-0: 0.11 naming; legacy-0: only the old KV name; both-0: 0.10 emits both (values differ here);
    two-engines-0: data parallel, one series per engine; odd: a namespace with a quote and a backslash."""
    pages = [
        vllm_page("new-0"),
        vllm_page("legacy-0", rename={NEW: LEGACY}),
        vllm_page("both-0"),
        "\n".join(line for line in vllm_page("both-0", rename={NEW: LEGACY, "} 0.4375": "} 0.25"}).splitlines()
                  if line.startswith(LEGACY)) + "\n",
        vllm_page("two-engines-0"),
        vllm_page("two-engines-0", rename={'engine="0"': 'engine="1"', "} 0.4375": "} 0.5625", "} 14.0": "} 6.0", "} 3.0": "} 1.0"}),
    ]
    if skip_reason():
        pytest.skip(skip_reason() or "")
    odd = to_openmetrics([(NEW, {"namespace": ODD_NAMESPACE, "pod": "odd-0", "model_name": "m"}, 0.125)])
    with run_prometheus(backfill(*pages).removesuffix("# EOF\n") + odd) as server:
        yield server


def pods(url: str, **filters) -> dict[str, dict]:
    async def run():
        async with PrometheusClient(url) as client:
            return await read_pods(client, metric_names(get_registry().profiles()), at=BASE_TIMESTAMP, **filters)
    return {r.pod: r.to_dict() for r in asyncio.run(run())}


def test_the_current_kv_cache_name_is_read(vllm_prometheus):
    new = pods(vllm_prometheus.url)["new-0"]
    # vllm:kv_cache_usage_perc 0.4375; num_requests_running 14; num_requests_waiting 3
    assert (new["kv_cache_usage_ratio"], new["requests_running"], new["requests_waiting"]) == (0.4375, 14, 3)
    assert new["metric_names"]["kv_cache_usage_ratio"] == NEW
    assert new["model"] == "meta-llama/Llama-3.1-8B-Instruct" and new["namespace"] == "llm-serving"


def test_the_legacy_kv_cache_name_is_read_when_it_is_the_only_one(vllm_prometheus):
    legacy = pods(vllm_prometheus.url)["legacy-0"]
    assert legacy["kv_cache_usage_ratio"] == 0.4375
    assert legacy["metric_names"]["kv_cache_usage_ratio"] == LEGACY


def test_when_both_names_are_emitted_the_current_one_wins(vllm_prometheus):
    both = pods(vllm_prometheus.url)["both-0"]
    assert both["kv_cache_usage_ratio"] == 0.4375  # not the legacy series' 0.25
    assert both["metric_names"]["kv_cache_usage_ratio"] == NEW


def test_engines_of_one_pod_add_up_and_the_busiest_cache_counts(vllm_prometheus):
    two = pods(vllm_prometheus.url)["two-engines-0"]
    assert (two["requests_running"], two["requests_waiting"]) == (14 + 6, 3 + 1)
    assert two["kv_cache_usage_ratio"] == max(0.4375, 0.5625)


def test_filters_select_by_pod_labels(vllm_prometheus):
    assert list(pods(vllm_prometheus.url, pod="legacy-0")) == ["legacy-0"]
    assert sorted(pods(vllm_prometheus.url, namespace="llm-serving")) == ["both-0", "legacy-0", "new-0", "two-engines-0"]
    assert pods(vllm_prometheus.url, namespace="nowhere") == {}


@pytest.mark.parametrize(
    "attempt",
    [
        'llm-serving"} or vllm:num_requests_running{pod=~".+',
        'llm-serving", pod=~".+',
        "llm-serving\\",
        "x\"}) or vector(1) or sum(up{a=\"",
        ".*",
    ],
)
def test_a_filter_value_stays_a_literal(vllm_prometheus, attempt):
    # each attempt would widen the selection (or break the query) if pasted into PromQL unescaped
    assert pods(vllm_prometheus.url, namespace=attempt) == {}
    assert pods(vllm_prometheus.url, pod=attempt) == {}


def test_a_value_with_quotes_and_backslashes_matches_exactly(vllm_prometheus):
    found = pods(vllm_prometheus.url, namespace=ODD_NAMESPACE)
    assert list(found) == ["odd-0"] and found["odd-0"]["namespace"] == ODD_NAMESPACE


@needs_prometheus
def test_the_pod_report_gives_each_pod_the_figures_of_its_own_devices(prometheus):
    async def run():
        async with PrometheusClient(prometheus.url) as client:
            return await read_pod_report(client, select(["nvidia"]), [get_registry().get("nvidia")], at=BASE_TIMESTAMP,
                                         namespace="llm-serving")
    report = asyncio.run(run())
    (pod,) = report.pods
    assert pod["pod"] == "vllm-llama-3-1-8b-5f7d9c6b8-q2xkz" and pod["kv_cache_usage_ratio"] == 0.4375
    # the shared samples put this pod on GPU 0 of gpu-node-01 and of gpu-node-02: 612.35 W and 73421 MiB each
    assert pod["devices"]["status"] == "attributed"
    assert pod["devices"]["devices"] == ["nvidia:gpu-node-01/0", "nvidia:gpu-node-02/0"]
    assert pod["devices"]["power_watts"] == 612.35 + 612.35
    assert pod["devices"]["memory_used_bytes"] == 2 * 73421 * 2**20
    assert report.queries_sent == 3 + 1 + 7 + 1  # three pod metrics, the inventory, seven quantities, the targets


def test_a_pod_with_an_unavailable_device_gets_no_device_figures():
    reading = DeviceReading("nvidia", "n1", "0", values={"power_watts": 300.0, "utilization_ratio": 0.5})
    clean = PodAllocation("ns", "p", "nvidia", "n1", devices=["n1/0"])
    figures = device_figures([clean], {("nvidia", "n1/0"): reading})
    assert (figures["status"], figures["power_watts"], figures["utilization_ratio"]) == ("attributed", 300.0, 0.5)
    shared = PodAllocation("ns", "p", "nvidia", "n1", devices=["n1/0"], problems=["shares n1/1 with another pod"])
    refused = device_figures([shared], {("nvidia", "n1/0"): reading})
    assert (refused["status"], refused["power_watts"], refused["memory_used_bytes"]) == ("unavailable", None, None)
    assert refused["reason"] == "nvidia: shares n1/1 with another pod"
