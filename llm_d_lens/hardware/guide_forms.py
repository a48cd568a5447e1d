"""The hardware-provider guide's own spellings, read as the fields Lens reads.

The guide's section 3 template declares telemetry the short way: ``device_metrics`` naming one
exporter metric per quantity (no ``device_metric_sources``), and a ``pod_metrics`` key from vLLM's
older metric name (``gpu_cache_usage``, vLLM's ``vllm:gpu_cache_usage_perc`` before it became
``vllm:kv_cache_usage_perc``). A profile written exactly to the template must work, so before the
model is built each such entry is also written in the form Lens reads, and :func:`notes` says
what was assumed (``lens hardware validate`` and ``doctor`` print them as warnings).

Only what is unambiguous is converted: a ``device_metrics`` value that is one bare metric name,
for a quantity with no source of its own. An expression (``avg by (gpu) (x)``) has no unit or
device labels Lens could read from it, so it stays the dashboards' PromQL and gets a note saying
to declare the source.
"""

from __future__ import annotations

from typing import Any

from llm_d_lens.hardware.quantities import PROM_METRIC_NAME, QUANTITY_UNITS

#: pod_metrics keys the guide (or an older vLLM) uses -> the key Lens reads for the same figure
POD_METRIC_ALIASES: dict[str, str] = {"gpu_cache_usage": "kv_cache_usage"}

#: fields the guide lists that Lens does not read and no longer accepts, each with why (shown with
#: the "unknown key" a profile carrying one gets): (parent path, key) -> reason
REMOVED_FIELDS: dict[tuple[tuple[str, ...], str], str] = {
    (("telemetry", "allocation"), "node_labels"):
        "Lens no longer reads it: a node label names a product per node, not a device, so it cannot attribute a "
        "device to a pod; the joins key on device attributes (pci_attributes, uuid_attributes, serial_attributes) "
        "and inventory.product_labels names the product. Remove it",
    (("telemetry", "allocation"), "device_name_pattern"):
        "Lens no longer reads it: an allocated DRA device is matched to the exporter's by its attributes "
        "(pci_attributes, uuid_attributes, serial_attributes), never guessed from its name. Remove it",
    (("telemetry", "exporter"), "port_name"):
        "Lens no longer reads it: the exporter's scrape is found by pod_selectors and port, and the vendor chart "
        "creates its own ServiceMonitor/PodMonitor. Remove it",
}

#: the pod_metrics keys Lens reads (held equal to monitoring.profiling.pods.POD_METRICS by a test)
POD_METRIC_KEYS: frozenset[str] = frozenset({
    "kv_cache_usage", "requests_running", "requests_waiting", "prefix_cache_hits", "prefix_cache_queries",
    "prompt_tokens", "generation_tokens", "preemptions", "time_to_first_token", "inter_token_latency", "e2e_latency",
})

#: the unit a bare device_metrics name is read in: utilization is a percentage in every vendor's
#: exporter Lens ships (DCGM_FI_DEV_GPU_UTIL, gpu_gfx_activity, xpum_engine_group_utilization,
#: habanalabs_utilization); any other quantity is read in its own common unit, unconverted
ASSUMED_UNITS: dict[str, str] = {"utilization": "percent"}


def bare_metric(expression: Any) -> str | None:
    """The metric name when a PromQL expression is nothing but one metric name."""
    if isinstance(expression, str) and PROM_METRIC_NAME.match(expression.strip()):
        return expression.strip()
    return None


def converted_source(quantity: str, metric: str) -> dict[str, Any]:
    """The ``device_metric_sources`` entry a bare ``device_metrics`` name stands for."""
    output = QUANTITY_UNITS[quantity]
    return {"metrics": [metric], "unit": ASSUMED_UNITS.get(quantity, output), "output_unit": output}


def read_guide_forms(telemetry: Any) -> Any:
    """A telemetry payload with the guide's short forms also written the way Lens reads them.

    Nothing is removed (the profile still shows what its author wrote); anything of an unexpected
    type is left for the schema to refuse.
    """
    if not isinstance(telemetry, dict):
        return telemetry
    out = dict(telemetry)
    metrics, sources = out.get("device_metrics"), out.get("device_metric_sources", {})
    if isinstance(metrics, dict) and isinstance(sources, dict):
        added = {q: converted_source(q, name) for q, expr in metrics.items()
                 if q in QUANTITY_UNITS and q not in sources and (name := bare_metric(expr)) is not None}
        if added:
            out["device_metric_sources"] = {**sources, **added}
    pods = out.get("pod_metrics")
    if isinstance(pods, dict) and all(_names(v) is not None for v in pods.values()):
        merged = dict(pods)
        for alias, key in POD_METRIC_ALIASES.items():
            if alias in pods:
                names = list(dict.fromkeys([*(_names(merged.get(key)) or []), *(_names(pods[alias]) or [])]))
                merged[key] = names[0] if len(names) == 1 else names
        out["pod_metrics"] = merged
    return out


def _names(value: Any) -> list[str] | None:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def notes(profile: Any) -> list[Any]:
    """Warnings for what was read from the guide's short forms, and for pod_metrics keys Lens never reads."""
    from llm_d_lens.hardware.errors import ProfileIssue

    t = profile.telemetry
    if t is None:
        return []
    found = []
    for quantity, expression in t.device_metrics.items():
        name, source = bare_metric(expression), t.device_metric_sources.get(quantity)
        if name is not None and source is not None and source.metrics == [name] and not source.matchers:
            found.append(ProfileIssue(
                f"$.telemetry.device_metrics.{quantity}",
                f"read as device_metric_sources.{quantity}: metric {name} in {source.unit}, converted to "
                f"{source.output_unit}, one series per device label; declare device_metric_sources.{quantity} "
                "to give its unit, matchers and aggregation", expression))
        elif quantity not in _quantities():
            found.append(ProfileIssue(f"$.telemetry.device_metrics.{quantity}", "is not a quantity Lens reads; Lens "
                                      f"reads: {', '.join(sorted(_quantities()))}", expression))
        elif source is None:
            found.append(ProfileIssue(
                f"$.telemetry.device_metrics.{quantity}",
                "is a PromQL expression, not one metric name, so Lens cannot read it as a device quantity (it has no "
                f"unit or device labels); declare device_metric_sources.{quantity} for lens telemetry devices to read it",
                expression))
    for key in t.pod_metrics:
        if key in POD_METRIC_ALIASES:
            found.append(ProfileIssue(f"$.telemetry.pod_metrics.{key}", f"read as pod_metrics.{POD_METRIC_ALIASES[key]}, "
                                      "the key Lens reads (vLLM renamed gpu_cache_usage_perc to kv_cache_usage_perc)",
                                      t.pod_metrics[key]))
        elif key not in POD_METRIC_KEYS:
            found.append(ProfileIssue(f"$.telemetry.pod_metrics.{key}", "is not a pod metric Lens reads; Lens reads: "
                                      f"{', '.join(sorted(POD_METRIC_KEYS))}", t.pod_metrics[key]))
    return found


def _quantities() -> set[str]:
    return set(QUANTITY_UNITS)
