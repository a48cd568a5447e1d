"""Per-pod serving metrics from a real Prometheus: both KV-cache names, engines, filters, injection."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.monitoring.accelerator.attribution import PodAllocation
from llm_d_lens.monitoring.accelerator.readings import DeviceReading
from llm_d_lens.monitoring.accelerator.service import select
from llm_d_lens.monitoring.profiling.pods import POD_METRICS, metric_names, read_pods
from llm_d_lens.monitoring.profiling.service import device_figures, read_pod_report
from llm_d_lens.testing.telemetry_pages import as_stored, backfill, needs_prometheus, sample_text
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


def pod_report(prometheus, hardware: str, namespace: str = "llm-serving"):
    async def run():
        async with PrometheusClient(prometheus.url) as client:
            return await read_pod_report(client, select([hardware], require_sources=False), [get_registry().get(hardware)],
                                         at=BASE_TIMESTAMP, namespace=namespace)
    return asyncio.run(run())


@needs_prometheus
def test_the_pod_report_gives_each_pod_the_figures_of_its_own_devices(prometheus):
    report = pod_report(prometheus, "amd")
    (pod,) = [p for p in report.pods if p["pod"] == "vllm-llama-3-1-8b-5f7d9c6b8-q2xkz"]
    assert pod["pod"] == "vllm-llama-3-1-8b-5f7d9c6b8-q2xkz" and pod["kv_cache_usage_ratio"] == 0.4375
    # the AMD sample puts this pod on GPU PCB049874-0071 of amd-node-01: 688 W, 178944 MB (MiB) used
    assert pod["devices"]["status"] == "attributed"
    assert pod["devices"]["devices"] == ["amd:amd-node-01/PCB049874-0071"]
    assert pod["devices"]["power_watts"] == 688
    assert pod["devices"]["memory_used_bytes"] == 178944 * 2**20
    # one query per pod metric, and one for the devices (the inventory, twelve quantities, the targets)
    assert report.queries_sent == len(POD_METRICS) + 2  # and the recorded selector


@needs_prometheus
def test_a_pod_the_exporters_name_on_two_nodes_gets_no_figures_and_the_reason(prometheus):
    """The shared DCGM sample is loaded for gpu-node-01 and gpu-node-02, both naming the same pod on GPU 0:
    a pod lives on one node, so the two GPUs are not summed (they were once: 2 x 612.35 W)."""
    (pod,) = pod_report(prometheus, "nvidia").pods
    figures = pod["devices"]
    assert figures["status"] == "unavailable" and figures["power_watts"] is None
    assert figures["devices"] == ["nvidia:gpu-node-01/0", "nvidia:gpu-node-02/0"]
    assert "name it on 2 nodes (gpu-node-01, gpu-node-02)" in figures["reason"]


@needs_prometheus
def test_pods_of_hardware_without_device_sources_still_report_their_serving_metrics(prometheus):
    """``--hardware cpu`` once failed: CPU declares pod metrics but no device sources."""
    (pod,) = pod_report(prometheus, "cpu").pods
    assert pod["kv_cache_usage_ratio"] == 0.4375 and pod["metric_names"]["kv_cache_usage_ratio"] == "vllm:kv_cache_usage_perc"
    assert pod["devices"]["status"] is None and pod["devices"]["reason"] is None


@needs_prometheus
def test_a_pod_holding_no_device_lens_sees_says_why(prometheus):
    # the XPU samples' kube_pod labels name the pod, but the default (dra) join needs cluster objects
    (served,) = pod_report(prometheus, "intel-xpu").pods
    assert served["devices"]["status"] is None
    assert served["devices"]["reason"] == (
        "no device series of the selected hardware is attributed to this pod "
        "(its exporters' pod labels do not name it; to join the allocations give --cluster FILE or --cluster kubectl; "
        "the API's ?cluster=NAME; the server's LENS_CLUSTER_OBJECTS)")


def test_the_kv_cache_name_order_does_not_depend_on_which_profile_comes_first():
    registry = get_registry()
    profiles = [registry.get(h) for h in ("cpu", "nvidia", "amd", "intel-xpu")]
    assert metric_names(profiles) == metric_names(list(reversed(profiles)))
    assert metric_names(profiles)["kv_cache_usage"] == [NEW, LEGACY]


def test_the_cpu_profile_reads_no_swap_space_gauge_as_kv_cache():
    """vLLM V0's vllm:cpu_cache_usage_perc is the CPU swap space of a GPU engine, not a KV cache."""
    assert "vllm:cpu_cache_usage_perc" not in metric_names([get_registry().get("cpu")])["kv_cache_usage"]


def test_a_pod_with_an_unavailable_device_gets_no_device_figures():
    reading = DeviceReading("nvidia", "n1", "0", values={"power_watts": 300.0, "utilization_ratio": 0.5})
    clean = PodAllocation("ns", "p", "nvidia", "n1", devices=["n1/0"])
    figures = device_figures([clean], {("nvidia", "n1/0"): reading})
    assert (figures["status"], figures["power_watts"], figures["utilization_ratio"]) == ("attributed", 300.0, 0.5)
    shared = PodAllocation("ns", "p", "nvidia", "n1", devices=["n1/0"], problems=["shares n1/1 with another pod"])
    refused = device_figures([shared], {("nvidia", "n1/0"): reading})
    assert (refused["status"], refused["power_watts"], refused["memory_used_bytes"]) == ("unavailable", None, None)
    assert refused["reason"] == "nvidia: shares n1/1 with another pod"
