"""Synthetic exporter series generated from a profile's own plan, for benchmarks and tests.

Every metric a plan's device sources read (fallbacks included), with the label names its
label_schema declares and labels its matchers accept, so a generated cluster exercises exactly
what a refresh reads, for any hardware, without naming one.
"""

from __future__ import annotations

import random

from llm_d_lens.monitoring.accelerator.plan import DevicePlan
from llm_d_lens.prometheus.promql import matches, parse_matcher

#: Labels beyond the profile's own, so series weigh what real exporters' do.
EXTRA_LABELS = 6


def satisfying(matchers: tuple[str, ...]) -> dict[str, str]:
    """Labels a series needs to pass ``matchers`` (absent labels satisfy "" and negative matchers)."""
    labels: dict[str, str] = {}
    for text in matchers:
        name, op, value = parse_matcher(text)
        if op == "=" and value:
            labels[name] = value
        elif op == "=~":
            labels[name] = value.split("|")[0]
    for text in matchers:
        if not matches(labels, *parse_matcher(text)):
            raise ValueError(f"cannot generate a series for matcher {text}")
    return labels


def series_for(plan: DevicePlan, node: str, index: int, rng: random.Random,
               sub: str | None = "0") -> list[tuple[str, dict[str, str], float]]:
    """Every series one device (``sub``: its tile, None: the device itself) of ``plan`` exports."""
    first = {common: names[0] for common, names in plan.labels.items()}
    identity = {
        "node": node, "device": f"{index}", "uuid": f"{node}-dev-{index}", "pci_bus_id": f"0000:{16 + index:02x}:00.0",
        "serial": f"SN-{node}-{index}", "model": "bench accelerator", "source": f"{node}-dev-{index}",
    }
    if sub is not None:
        identity["sub"] = sub
    if index % 2 == 0:
        identity.update({"pod": f"serve-{node}-{index // 2}", "namespace": "bench", "container": "server"})
    labels = {first[common]: value for common, value in identity.items() if common in first and (common != "sub" or plan.folded)}
    # real exporters put 11-16 labels on a series (driver and firmware versions, card model, job ids, ...)
    labels.update({f"exporter_info_{k}": f"{chr(97 + k)}-value-{index % 4}-{k * 7919 % 1000:03d}" for k in range(EXTRA_LABELS)})
    out, seen = [], set()
    for metric, matchers in plan.metric_selectors():
        series = {**labels, **satisfying(matchers)}
        identity_key = (metric, tuple(sorted(series.items())))
        if identity_key not in seen:  # two sources may read one metric: it is still one series
            seen.add(identity_key)
            out.append((metric, series, round(rng.uniform(0.1, 0.9), 4)))
    return out
