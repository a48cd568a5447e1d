"""Serving metrics per pod, read by the pod labels Prometheus puts on each scraped series.

The metric names come from the profiles' ``pod_metrics``. A key may list several names (a model
server renamed its KV-cache gauge across versions, and some versions emit both): per pod, the
first listed name that pod reports wins, and the answer says which one it was.
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


@dataclass(frozen=True)
class PodMetric:
    key: str  # the profiles' pod_metrics key
    field: str
    aggregation: str  # across a pod's series (engines)


#: The pod_metrics keys Lens reads, their reading fields, and how a pod's engines combine.
POD_METRICS: tuple[PodMetric, ...] = (
    PodMetric("kv_cache_usage", "kv_cache_usage_ratio", "max"),
    PodMetric("requests_running", "requests_running", "sum"),
    PodMetric("requests_waiting", "requests_waiting", "sum"),
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


async def read_pods(
    client: PrometheusClient,
    names: dict[str, list[str]],
    *,
    at: float | None = None,
    namespace: str | None = None,
    pod: str | None = None,
) -> list[PodReading]:
    """Every pod reporting any of the metrics, one query per pod metric."""
    wanted = [m for m in POD_METRICS if names.get(m.key)]
    answers = await gather_all(*(client.query(pod_query(m, names[m.key], namespace, pod), at) for m in wanted))
    return merge(zip(wanted, answers))


def merge(answers: Iterable[tuple[PodMetric, list[Sample]]]) -> list[PodReading]:
    pods: dict[tuple[str, str], PodReading] = {}
    for metric, rows in answers:
        for row in rows:
            ref = (row.labels.get("namespace", ""), row.labels.get("pod", ""))
            reading = pods.setdefault(ref, PodReading(*ref))
            reading.model = reading.model or row.labels.get(MODEL_LABEL) or None
            # a pod serving two models reports a row for each: engines add up, usage is the most loaded
            previous = reading.values.get(metric.field)
            reading.values[metric.field] = row.value if previous is None else (
                previous + row.value if metric.aggregation == "sum" else max(previous, row.value))
            reading.sources[metric.field] = row.labels.get(METRIC_LABEL, "")
    return sorted(pods.values(), key=lambda r: r.ref)
