"""Prometheus recording and alerting rules generated from the hardware profiles.

Each hardware that declares device sources gets one rule group. Its recording rules store every
declared quantity as ``lens:accelerator_<field>`` (``lens:accelerator_memory_used_bytes`` …) with the
hardware in ``lens_hardware``; each expression is :func:`.queries.dashboard_query`, the PromQL Lens
already holds to a refresh's numbers, so a recorded series is what ``lens telemetry devices`` reports.
Beside them, what else a refresh reads, so a refresh can read one selector instead of the exporters'
series (:mod:`.recorded`): the inventory (``lens:accelerator_inventory``, the exporter's identity and
pod labels as the inventory query groups them, with ``lens_rules``, a digest of the group's recording
rules, so a refresh never reads series recorded by other rules), which fallback answered a device
(``lens:accelerator_fallback``, its number, per quantity in ``lens_quantity``), the sentinel rows
(``lens:accelerator_sentinel``) and which pod each of the hardware's scrape targets is
(``lens:accelerator_scrape_target``).
Its alerting rules come after, in the same group (Prometheus evaluates a group's rules in order, so
an alert reads the values recorded in the same evaluation):

* one per health flag the profile declares (:data:`.plan.HEALTH_FLAGS`), firing where Lens' own health
  check calls the device a problem;
* the exporter missing on a node that has the hardware (kube-state-metrics' node capacity of the
  profile's ``resource_prefixes``, or its node labels of the ``node_label_selector``) but no recorded
  series of it;
* a scrape target that served the hardware's metrics within :data:`TARGET_LOOKBACK` and is down.

Every alert carries ``summary``, ``description`` and ``runbook`` annotations; the runbook names the
exporter metrics the profile reads, so no vendor name is written here.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.monitoring.accelerator.plan import (
    FALLBACK_LABEL, HEALTH_FLAGS, IDENTITY_ORDER, DevicePlan, QuantityPlan, lens_label,
)
from llm_d_lens.monitoring.accelerator.queries import (
    DEVICE_KEY, TARGET_LABELS, TILE_KEY, dashboard_query, on_lens_labels, inventory_query, quantity_query, sentinel_query,
)
from llm_d_lens.prometheus.combine import PART_LABEL
from llm_d_lens.prometheus.promql import label_name, matcher, quote, selector

RECORD_PREFIX = "lens:accelerator_"
HARDWARE_LABEL = lens_label("hardware")
GROUP_PREFIX = "lens-accelerator-"
#: How long after its last sample a scrape target still counts as one of the hardware's exporters.
TARGET_LOOKBACK = "1h"
#: kube-state-metrics' series: a node's capacity per resource (names sanitised to label characters)
#: and its labels as ``label_<sanitised key>`` (only the keys its ``--metric-labels-allowlist`` names).
NODE_CAPACITY, NODE_LABELS = "kube_node_status_capacity", "kube_node_labels"
PROMETHEUS_RULE_API = "monitoring.coreos.com/v1"
#: What else a refresh reads, recorded beside the quantities.
INVENTORY_RECORD = RECORD_PREFIX + "inventory"
FALLBACK_RECORD = RECORD_PREFIX + "fallback"
SENTINEL_RECORD = RECORD_PREFIX + "sentinel"
TARGET_RECORD = RECORD_PREFIX + "scrape_target"
#: The inventory record's label holding :func:`rules_digest`; the quantity a fallback record is of.
DIGEST_LABEL = lens_label("rules")
QUANTITY_LABEL = PART_LABEL


@dataclass(frozen=True)
class FlagAlert:
    """How a health flag alerts: its name, severity, how long it must hold, and what to do."""

    name: str
    severity: str
    hold: str | None  # the rule's ``for``; None: the first evaluation that sees it fires
    summary: str
    action: str


#: One alert per health flag of :data:`.plan.HEALTH_FLAGS`. Error counts, failure flags and event codes
#: fire at once (a single reading is the evidence); verdicts and link states must hold, so a restart or
#: a link retraining does not page.
FLAG_ALERTS: dict[str, FlagAlert] = {
    "ecc_uncorrected": FlagAlert(
        "LensAcceleratorUncorrectedMemoryErrors", "critical", None, "uncorrected device memory errors",
        "Drain the node's workloads from this device and check the error count after a driver reset; a device whose "
        "count keeps rising, or whose memory rows cannot be remapped, goes back to its vendor.",
    ),
    "critical_event": FlagAlert(
        "LensAcceleratorCriticalEvent", "warning", None, "a critical device event was reported",
        "Look the event code up in the driver documentation of the exporter named above and "
        "read the node's kernel log around the time the alert started; most codes need the workload restarted, some "
        "a device reset or a drained node.",
    ),
    "row_remap_failure": FlagAlert(
        "LensAcceleratorRowRemapFailed", "critical", None, "device memory row remapping failed",
        "The device could not retire a failing memory row: take it out of service (cordon the node or disable the "
        "device) and replace it; a reset does not clear this.",
    ),
    "device_healthy": FlagAlert(
        "LensAcceleratorUnhealthy", "critical", "5m", "the exporter reports the device unhealthy",
        "Read the exporter's own logs and the device's management tool on the node for the reason; drain the device's "
        "workloads until it reports healthy again.",
    ),
    "links_up": FlagAlert(
        "LensAcceleratorLinkDown", "warning", "5m", "a device link is down",
        "Check the link's cabling and switch port, then the device's link state with its management tool on the node; "
        "collective operations across this device fail or slow down until the link is back.",
    ),
}
EXPORTER_MISSING = "LensAcceleratorExporterMissing"
SCRAPE_DOWN = "LensAcceleratorExporterScrapeDown"
WHERE = "{{ $labels.lens_node }} device {{ $labels.lens_device }}"


def recorded_name(quantity: QuantityPlan) -> str:
    """The series a quantity is recorded as: ``lens:accelerator_`` and the reading's field (unit included)."""
    return RECORD_PREFIX + quantity.quantity.field


def group_name(hardware: str) -> str:
    return GROUP_PREFIX + hardware


def recorded_selector(hardware: str, quantity: QuantityPlan) -> str:
    """One hardware's recorded series of ``quantity``."""
    return f"{recorded_name(quantity)}{{{HARDWARE_LABEL}={quote(hardware)}}}"


def fallback_query(plan: DevicePlan, quantity: QuantityPlan) -> str | None:
    """Which fallback answered each device (or tile) of ``quantity``: its number (1 = first), the largest of the
    device's tiles, on ``lens_*`` labels; None when the quantity has no fallback."""
    if not quantity.fallbacks:
        return None
    by = ", ".join(label_name(n) for n in plan.raw_labels(TILE_KEY))
    sourced = quantity_query(plan, quantity)
    numbered = " or ".join(
        f'({number} * count by ({by}) ({sourced} and on({FALLBACK_LABEL}) '
        f'label_replace(vector(1), {quote(FALLBACK_LABEL)}, "{number}", "", "")))'
        for number in range(1, len(quantity.fallbacks) + 1))
    return on_lens_labels(plan, f"({numbered})", DEVICE_KEY if quantity.fold != "none" else TILE_KEY)


def targets_record_query(plan: DevicePlan) -> str:
    """Which pod each scrape target that serves the hardware's identity series is (its ``up`` series' labels)."""
    by = ", ".join(TARGET_LABELS)
    served = " or ".join(selector(metric, matchers) for metric, matchers in plan.identity_selectors())
    return f"group by ({by}, namespace, pod) (up and on ({by}) ({served}))"


def _records(plan: DevicePlan) -> list[dict[str, Any]]:
    hardware = {HARDWARE_LABEL: plan.hardware}
    rules = [{"record": recorded_name(q), "expr": dashboard_query(plan, q), "labels": dict(hardware)} for q in plan.quantities]
    for q in plan.quantities:
        expr = fallback_query(plan, q)
        if expr is not None:
            rules.append({"record": FALLBACK_RECORD, "expr": expr, "labels": {**hardware, QUANTITY_LABEL: q.quantity.key}})
    sentinels = sentinel_query(plan)
    if sentinels is not None:
        rules.append({"record": SENTINEL_RECORD, "expr": sentinels, "labels": dict(hardware)})
    if "pod" in plan.labels:
        rules.append({"record": TARGET_RECORD, "expr": targets_record_query(plan), "labels": dict(hardware)})
    return rules


#: :func:`rules_digest` per plan, keyed by the plan's whole content (its repr): rendering the rules takes milliseconds,
#: and a refresh that reads recorded series checks every hardware's digest
_DIGESTS: dict[str, str] = {}


def rules_digest(plan: DevicePlan) -> str:
    """A digest of every recording rule of the hardware but the inventory's own label: what its series were made by."""
    key = repr(plan)
    digest = _DIGESTS.get(key)
    if digest is None:
        if len(_DIGESTS) >= 64:
            _DIGESTS.clear()
        digest = _DIGESTS[key] = _digest(plan)
    return digest


def _digest(plan: DevicePlan) -> str:
    inventory = {"record": INVENTORY_RECORD, "expr": inventory_query(plan)}
    text = json.dumps([*_records(plan), inventory], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def recording_rules(plan: DevicePlan) -> list[dict[str, Any]]:
    """One recording rule per declared quantity, in the plan's order, then what else a refresh reads."""
    inventory = {"record": INVENTORY_RECORD, "expr": inventory_query(plan),
                 "labels": {HARDWARE_LABEL: plan.hardware, DIGEST_LABEL: rules_digest(plan)}}
    return [*_records(plan), inventory]


def _reads(quantity: QuantityPlan) -> str:
    return "; then ".join(source.describe() for source in quantity.sources)


def _flag_alert(plan: DevicePlan, quantity: QuantityPlan, problem: str, when: str) -> dict[str, Any]:
    spec = FLAG_ALERTS[quantity.quantity.key]
    comparison = "> 0" if when == "nonzero" else "== 0"
    rule: dict[str, Any] = {"alert": spec.name, "expr": f"{recorded_selector(plan.hardware, quantity)} {comparison}"}
    if spec.hold:
        rule["for"] = spec.hold
    rule["labels"] = {"severity": spec.severity, HARDWARE_LABEL: plan.hardware}
    rule["annotations"] = {
        "summary": f"{plan.hardware}: {spec.summary} on {WHERE}",
        "description": f"{recorded_name(quantity)} is {{{{ $value }}}} on {WHERE} ({problem}).",
        "runbook": (f"Read from the exporter's {_reads(quantity)} (lens telemetry devices --hardware {plan.hardware} "
                    f"--node <node> shows the device and the pod holding it). {spec.action}"),
    }
    return rule


def sanitised(name: str) -> str:
    """A Kubernetes name as kube-state-metrics writes it in a label name or value: other characters become ``_``."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def node_evidence(profile: HardwareProfile) -> str | None:
    """Nodes (label ``node``) that have the hardware, by kube-state-metrics; None when the profile says neither how."""
    parts = []
    if profile.resource_prefixes:
        regex = "|".join(f"{sanitised(p)}.*" for p in profile.resource_prefixes)
        parts.append(f"max by (node) ({selector(NODE_CAPACITY, (matcher('resource', '=~', regex),))} > 0)")
    if profile.node_label_selector:
        matchers = tuple(matcher(f"label_{sanitised(key)}", "=~", ".+") if value == "*" else matcher(f"label_{sanitised(key)}", "=", value)
                         for key, value in sorted(profile.node_label_selector.items()))
        parts.append(f"max by (node) ({selector(NODE_LABELS, matchers)})")
    return " or ".join(parts) if parts else None


def identity_quantity(plan: DevicePlan) -> QuantityPlan:
    """The quantity whose recorded series stand for "the exporter reports this device" (the plan's identity order)."""
    by_key = {q.quantity.key: q for q in plan.quantities}
    return next((by_key[k] for k in IDENTITY_ORDER if k in by_key), plan.quantities[0])


def _exporter_missing(profile: HardwareProfile, plan: DevicePlan) -> dict[str, Any] | None:
    nodes = node_evidence(profile)
    if nodes is None:
        return None
    node, reported = lens_label("node"), recorded_selector(plan.hardware, identity_quantity(plan))
    expr = f"({nodes}) unless on (node) label_replace(group by ({node}) ({reported}), \"node\", \"$1\", {quote(node)}, \"(.+)\")"
    return {
        "alert": EXPORTER_MISSING, "expr": expr, "for": "15m",
        "labels": {"severity": "warning", HARDWARE_LABEL: plan.hardware},
        "annotations": {
            "summary": f"{plan.hardware}: node {{{{ $labels.node }}}} has the hardware but no device metrics",
            "description": (f"kube-state-metrics shows node {{{{ $labels.node }}}} with {plan.hardware} devices, "
                            f"and no {recorded_name(identity_quantity(plan))} series names it."),
            "runbook": (f"lens telemetry exporters --hardware {plan.hardware} lists the nodes without a running exporter "
                        f"pod and whether Prometheus scrapes the others; lens telemetry exporters install --hardware "
                        f"{plan.hardware} installs the profile's chart. If the pod runs and is scraped, compare the "
                        f"exporter's node label with the Kubernetes node name (a node read from the target's address "
                        f"does not match). {SCRAPE_DOWN} fires as well while the target is down."),
        },
    }


def _scrape_down(plan: DevicePlan) -> dict[str, Any]:
    by = ", ".join(TARGET_LABELS)
    served = " or ".join(f"last_over_time({selector(metric, matchers)}[{TARGET_LOOKBACK}])"
                         for metric, matchers in plan.identity_selectors())
    return {
        "alert": SCRAPE_DOWN, "expr": f"(up == 0) and on ({by}) group by ({by}) ({served})", "for": "5m",
        "labels": {"severity": "warning", HARDWARE_LABEL: plan.hardware},
        "annotations": {
            "summary": f"{plan.hardware}: exporter target {{{{ $labels.instance }}}} is down",
            "description": (f"Prometheus cannot scrape {{{{ $labels.job }}}} {{{{ $labels.instance }}}}, which served "
                            f"{plan.hardware} device metrics within the last {TARGET_LOOKBACK}."),
            "runbook": (f"The device figures of the target's node are missing until it is back. Check the exporter pod "
                        f"(lens telemetry exporters --hardware {plan.hardware} --prometheus <url>), its logs and the "
                        f"target's last error on Prometheus' /targets page."),
        },
    }


def alerting_rules(profile: HardwareProfile, plan: DevicePlan) -> list[dict[str, Any]]:
    """The alerts for one hardware: its declared health flags, then the exporter's presence and scrape."""
    declared = {q.quantity.key: q for q in plan.quantities}
    rules = [_flag_alert(plan, declared[key], problem, when) for key, problem, when in HEALTH_FLAGS if key in declared]
    missing = _exporter_missing(profile, plan)
    if missing is not None:
        rules.append(missing)
    rules.append(_scrape_down(plan))
    return rules


def rule_groups(selection: Sequence[Any], *, alerts: bool = True) -> list[dict[str, Any]]:
    """One group per selected hardware (each a :class:`.service.Selected`): recordings, then alerts."""
    groups = []
    for chosen in selection:
        rules = recording_rules(chosen.plan)
        if alerts:
            rules += alerting_rules(chosen.profile, chosen.plan)
        groups.append({"name": group_name(chosen.plan.hardware), "rules": rules})
    return groups


def rules_file(selection: Sequence[Any], *, alerts: bool = True) -> dict[str, Any]:
    """A plain Prometheus rules file (``rule_files:``, ``promtool check rules``)."""
    return {"groups": rule_groups(selection, alerts=alerts)}


def prometheus_rule(selection: Sequence[Any], *, name: str = "lens-accelerators", namespace: str | None = None,
                    labels: Mapping[str, str] | None = None, alerts: bool = True) -> dict[str, Any]:
    """The same groups as a Prometheus Operator ``PrometheusRule`` object."""
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    metadata["labels"] = {"app.kubernetes.io/name": "lens", "app.kubernetes.io/component": "accelerator-rules", **(labels or {})}
    return {"apiVersion": PROMETHEUS_RULE_API, "kind": "PrometheusRule", "metadata": metadata,
            "spec": {"groups": rule_groups(selection, alerts=alerts)}}


def to_yaml(document: Mapping[str, Any], command: str) -> str:
    """``document`` as YAML under a header naming the command that regenerates it."""
    import yaml

    header = f"# Generated by Lens from the hardware profiles: {command}\n# Do not edit: run the command again instead.\n"
    return header + yaml.safe_dump(dict(document), sort_keys=False, allow_unicode=True, width=100)
