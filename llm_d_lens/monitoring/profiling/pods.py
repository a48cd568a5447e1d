"""Serving metrics per pod, read by the pod labels Prometheus puts on each scraped series.

The metric names come from the profiles' ``pod_metrics``. A key may list several names (a model
server renamed its KV-cache gauge across versions, and some versions emit both): per pod, the
first listed name that pod reports wins, and the answer says which one it was.

Beyond gauges, counters are read as per-second rates over :data:`RATE_WINDOW` (token throughput,
preemptions), the prefix-cache hit ratio as hits over queries (each name paired with the same
generation's denominator), and latency quantiles from the histograms' buckets, summed over a
pod's engines before the quantile is taken. One query per pod metric, whatever the number of pods.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.prometheus.client import PrometheusClient, Sample, gather_all
from llm_d_lens.prometheus.promql import matcher, quote, selector

#: The target labels Prometheus' Kubernetes discovery sets on every scraped series.
POD_LABELS = ("namespace", "pod")
MODEL_LABEL = "model_name"
METRIC_LABEL = "lens_metric"


#: The window counters and histograms are read over: long enough to hold several scrapes.
RATE_WINDOW = "5m"


@dataclass(frozen=True)
class PodMetric:
    key: str  # the profiles' pod_metrics key
    field: str
    aggregation: str  # across a pod's series (engines) and, in the answer, its models
    kind: str = "gauge"  # gauge | rate | ratio (of two counters' rates) | quantile (of a histogram)
    over: str | None = None  # ratio: the pod_metrics key of the denominator, name for name
    quantile: float | None = None


#: The pod_metrics keys Lens reads, their reading fields, and how a pod's engines combine.
POD_METRICS: tuple[PodMetric, ...] = (
    PodMetric("kv_cache_usage", "kv_cache_usage_ratio", "max"),
    PodMetric("requests_running", "requests_running", "sum"),
    PodMetric("requests_waiting", "requests_waiting", "sum"),
    PodMetric("prefix_cache_hits", "prefix_cache_hit_ratio", "max", "ratio", over="prefix_cache_queries"),
    PodMetric("prompt_tokens", "prompt_tokens_per_second", "sum", "rate"),
    PodMetric("generation_tokens", "generation_tokens_per_second", "sum", "rate"),
    PodMetric("preemptions", "preemptions_per_second", "sum", "rate"),
    *(PodMetric(key, f"{key}_p{round(q * 100)}_seconds", "max", "quantile", quantile=q)
      for key in ("time_to_first_token", "inter_token_latency", "e2e_latency") for q in (0.5, 0.99)),
)


@dataclass
class PodReading:
    namespace: str
    pod: str
    model: str | None = None
    values: dict[str, float] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # field -> metric name that answered

    @property
    def ref(self) -> tuple[str, str]:
        return (self.namespace, self.pod)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"namespace": self.namespace or None, "pod": self.pod or None, "model": self.model}
        for metric in POD_METRICS:
            value = self.values.get(metric.field)
            out[metric.field] = value if value is not None and math.isfinite(value) else None
        out["metric_names"] = self.sources
        return out


def metric_names(profiles: Iterable[HardwareProfile]) -> dict[str, list[str]]:
    """pod_metrics key -> metric names, in the profiles' order of preference, each name once.

    A name ranks by the earliest place any profile lists it (ties by name), so the order never
    depends on which profiles are selected first or how their ids sort.
    """
    ranks: dict[str, dict[str, int]] = {}
    for profile in profiles:
        declared = profile.telemetry.pod_metrics if profile.telemetry else {}
        for key, value in declared.items():
            bucket = ranks.setdefault(key, {})
            for position, name in enumerate([value] if isinstance(value, str) else value):
                bucket[name] = min(position, bucket.get(name, position))
    return {key: sorted(bucket, key=lambda n: (bucket[n], n)) for key, bucket in ranks.items()}


def pod_query(metric: PodMetric, names: Sequence[str], namespace: str | None = None, pod: str | None = None) -> str:
    """One query for every pod: per pod, the first of ``names`` it reports, tagged with that name."""
    filters = [matcher(label, "=", value) for label, value in zip(POD_LABELS, (namespace, pod)) if value is not None]
    by = ", ".join((*POD_LABELS, MODEL_LABEL))
    parts = [
        f'label_replace({metric.aggregation} by ({by}) ({selector(name, filters)}), {quote(METRIC_LABEL)}, {quote(name)}, "", "")'
        for name in names
    ]
    return f" or on({by}) ".join(parts)


def pod_metric_query(metric: PodMetric, names: dict[str, list[str]], namespace: str | None = None, pod: str | None = None) -> str:
    """One query for every pod of any kind of pod metric: per pod, the first listed name it reports."""
    if metric.kind == "gauge":
        return pod_query(metric, names[metric.key], namespace, pod)
    filters = [matcher(label, "=", value) for label, value in zip(POD_LABELS, (namespace, pod)) if value is not None]
    by = ", ".join((*POD_LABELS, MODEL_LABEL))

    def rate(name: str) -> str:
        return f"sum by ({by}) (rate({selector(name, filters)}[{RATE_WINDOW}]))"

    parts: list[tuple[str, str]] = []
    if metric.kind == "rate":
        parts = [(name, rate(name)) for name in names[metric.key]]
    elif metric.kind == "ratio":
        parts = [(top, f"({rate(top)} / ({rate(bottom)} > 0))") for top, bottom in zip(names[metric.key], names.get(metric.over or "", []))]
    elif metric.kind == "quantile":
        parts = [(name, f"histogram_quantile({metric.quantile}, sum by ({by}, le) "
                        f"(rate({selector(name + '_bucket', filters)}[{RATE_WINDOW}])))") for name in names[metric.key]]
    return f" or on({by}) ".join(f'label_replace({expression}, {quote(METRIC_LABEL)}, {quote(name)}, "", "")' for name, expression in parts)


def _readable(metric: PodMetric, names: dict[str, list[str]]) -> bool:
    if metric.kind == "ratio":
        return bool(names.get(metric.key)) and bool(names.get(metric.over or ""))
    return bool(names.get(metric.key))


async def read_pods(
    client: PrometheusClient,
    names: dict[str, list[str]],
    *,
    at: float | None = None,
    namespace: str | None = None,
    pod: str | None = None,
) -> list[PodReading]:
    """Every pod reporting any of the metrics, one query per pod metric."""
    wanted = [m for m in POD_METRICS if _readable(m, names)]
    answers = await gather_all(*(client.query(pod_metric_query(m, names, namespace, pod), at) for m in wanted))
    return merge(zip(wanted, answers))


def merge(answers: Iterable[tuple[PodMetric, list[Sample]]]) -> list[PodReading]:
    pods: dict[tuple[str, str], PodReading] = {}
    for metric, rows in answers:
        for row in rows:
            if not math.isfinite(row.value):  # a quantile of a histogram without observations in the window
                continue
            ref = (row.labels.get("namespace", ""), row.labels.get("pod", ""))
            reading = pods.setdefault(ref, PodReading(*ref))
            reading.model = reading.model or row.labels.get(MODEL_LABEL) or None
            # a pod serving two models reports a row for each: engines add up, usage is the most loaded
            previous = reading.values.get(metric.field)
            reading.values[metric.field] = row.value if previous is None else (
                previous + row.value if metric.aggregation == "sum" else max(previous, row.value))
            reading.sources[metric.field] = row.labels.get(METRIC_LABEL, "")
    return sorted(pods.values(), key=lambda r: r.ref)
