"""Write the demo history (``python -m llm_d_lens.monitoring.demo.make_telemetry``).

Vendor-neutral by construction: for every node of the demo inventory and every hardware on it
whose profile declares device metrics, one series per declared metric, labelled with the labels the
profile's ``label_schema`` names, valued in the source unit (the inverse of the plan's factor) so
that reading it back gives the intended common-unit value. Devices the inventory counts as
allocated are busy, the rest idle; values follow slow deterministic waves, so the file is the same
every time it is written.
"""

from __future__ import annotations

import gzip
import math
import re
from collections.abc import Iterator
from pathlib import Path

from llm_d_lens.monitoring.accelerator.plan import DevicePlan, QuantityPlan, plan_for

HERE = Path(__file__).parent
DURATION = 3600
STEP = 60
EQUALS = re.compile(r'^(?P<name>[A-Za-z_][A-Za-z0-9_]*)="(?P<value>[^"]*)"$')


def _wanted(device: int, busy: bool, t: int, memory_total: float) -> dict[str, float]:
    """The common-unit values of one device at ``t`` seconds."""
    phase = device * 0.7
    wave = 0.5 + 0.5 * math.sin(2 * math.pi * t / 1800 + phase)
    utilization = 0.62 + 0.3 * wave if busy else 0.02 * wave
    power = 180 + 420 * utilization
    return {
        "utilization": round(utilization, 4),
        "tensor_activity": round(utilization * 0.8, 4),
        "memory_total": memory_total,
        "memory_used": float(int(memory_total * (0.55 + 0.3 * wave if busy else 0.01)) // 2**20 * 2**20),
        "power": round(power, 1),
        "temperature": round(38 + 40 * utilization, 1),
        "energy": round(power * t + 1_000_000 * (device + 1), 1),
    }


def _labels(plan: DevicePlan, quantity: QuantityPlan, node: str, device: int, model: str) -> dict[str, str]:
    labels = {plan.labels["node"][0]: node, plan.labels["device"][0]: str(device)}
    if "model" in plan.labels and model:
        labels[plan.labels["model"][0]] = model
    for matcher in quantity.matchers:  # equality matchers select the series the exporter labels so
        found = EQUALS.match(matcher.strip())
        if found and found["value"]:
            labels[found["name"]] = found["value"]
    return labels


def _metrics(plan: DevicePlan, wanted: dict[str, float]) -> dict[str, tuple[QuantityPlan, float]]:
    """metric -> (the quantity it was set for, value in the source unit), honouring each combine rule."""
    values: dict[str, tuple[QuantityPlan, float]] = {}
    for q in plan.quantities:
        target = wanted[q.quantity.key] / float(q.factor)
        if q.combine == "divide":
            numerator = values.get(q.metrics[0], (q, target * 0.5))[1]
            values.setdefault(q.metrics[0], (q, numerator))
            values.setdefault(q.metrics[1], (q, numerator / target if target else 0.0))
        elif q.combine == "sum":
            missing = [m for m in q.metrics if m not in values]
            rest = target - sum(values[m][1] for m in q.metrics if m in values)
            for index, metric in enumerate(missing):
                values[metric] = (q, rest if index == 0 else 0.0)
        else:
            values.setdefault(q.metrics[0], (q, target))
    return values


def lines() -> Iterator[str]:
    from llm_d_lens.cluster.service import inspect
    from llm_d_lens.cluster.source import ClusterSource
    from llm_d_lens.hardware.registry import get_registry

    registry = get_registry()
    overview = inspect(ClusterSource(demo=True)).to_dict()
    for t in range(0, DURATION + 1, STEP):
        for node in overview["nodes"]:
            for held in node["hardware"]:
                plan = plan_for(registry.get(held["profile_id"]))
                if plan is None or not held["devices"]:
                    continue
                per_device = held["vram"]["total_bytes"] / held["devices"] if held["vram"]["total_bytes"] else 64 * 2**30
                model = (held["products"] or [""])[0]
                for device in range(held["devices"]):
                    wanted = _wanted(device, device < held["allocated"], t, float(per_device // 2**20 * 2**20))
                    for metric, (q, value) in _metrics(plan, wanted).items():
                        rendered = ",".join(f'{k}="{v}"' for k, v in sorted(_labels(plan, q, node["name"], device, model).items()))
                        yield f"{metric}{{{rendered}}} {value!r} {t * 1000}"


def main() -> None:
    text = "\n".join(lines()) + "\n"
    (HERE / "telemetry.prom.gz").write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))


if __name__ == "__main__":
    main()
