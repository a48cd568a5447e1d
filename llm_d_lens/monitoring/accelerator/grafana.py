"""A Grafana dashboard built from the same PromQL a refresh computes, one row per hardware.

Each panel's query is :func:`.queries.dashboard_query` (fold, fallbacks and relabelling inside
Prometheus), so a panel shows exactly the numbers ``lens telemetry devices`` reports. The dashboard
is Grafana's classic JSON model, importable as-is: it reads its Prometheus through a ``datasource``
template variable instead of a data source uid only one Grafana knows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llm_d_lens.monitoring.accelerator.plan import QuantityPlan
from llm_d_lens.monitoring.accelerator.queries import dashboard_query
from llm_d_lens.monitoring.accelerator.service import Selected

#: Grafana lays panels out on a grid 24 columns wide.
GRID_WIDTH = 24
PANEL_WIDTH, PANEL_HEIGHT, ROW_HEIGHT = 8, 8, 1
#: A recent classic-model schema version; Grafana migrates older ones on import, never newer ones down.
SCHEMA_VERSION = 39
DATASOURCE_VARIABLE = "datasource"
DATASOURCE = {"type": "prometheus", "uid": f"${{{DATASOURCE_VARIABLE}}}"}
#: Common unit -> Grafana's unit id.
GRAFANA_UNITS = {"ratio": "percentunit", "bytes": "bytes", "W": "watt", "J": "joule", "celsius": "celsius",
                 "count": "short", "code": "none", "B/s": "Bps", "flag": "bool",
                 "Hz": "hertz", "bitmask": "none"}
#: The panel title of each quantity when a profile's ``ui.chart_titles`` gives none.
TITLES = {
    "utilization": "Utilisation", "memory_used": "Memory used", "memory_total": "Memory total", "power": "Power",
    "energy": "Energy (counter)", "temperature": "Temperature", "tensor_activity": "Tensor activity",
    "memory_temperature": "Memory temperature", "memory_bandwidth": "Memory bandwidth", "ecc_corrected": "Corrected memory errors",
    "ecc_uncorrected": "Uncorrected memory errors", "pcie_replays": "PCIe replays", "critical_event": "Last critical event",
    "pcie_throughput": "PCIe throughput", "link_throughput": "Device link throughput", "link_errors": "Device link errors",
    "row_remap_failure": "Memory row remap failed", "remapped_rows_correctable": "Remapped rows (correctable)",
    "remapped_rows_uncorrectable": "Remapped rows (uncorrectable)", "link_traffic": "Device link traffic (counter)",
    "device_healthy": "Exporter health verdict", "links_up": "Links up",
    "core_clock": "Core clock", "memory_clock": "Memory clock", "power_limit": "Power limit",
    "throttle_reasons": "Clock throttle reasons (bitmask)", "power_throttle": "Power throttling (share of time)",
    "thermal_throttle": "Thermal throttling (share of time)", "link_data": "Device link data (counter)",
    "pcie_traffic": "PCIe traffic (counter)", "pending_rows_correctable": "Rows pending remap (correctable)",
    "pending_rows_uncorrectable": "Rows pending remap (uncorrectable)",
}


def _panel(panel_id: int, chosen: Selected, quantity: QuantityPlan, x: int, y: int) -> dict[str, Any]:
    key = quantity.quantity.key
    titles = chosen.profile.ui.chart_titles if chosen.profile.ui else {}
    legend = "{{lens_node}} {{lens_device}}" + (" {{lens_sub}}" if quantity.fold == "none" and "sub" in chosen.plan.labels else "")
    return {
        "id": panel_id,
        "type": "timeseries",
        "title": titles.get(key) or TITLES[key],  # type: ignore[call-overload]
        "datasource": DATASOURCE,
        "gridPos": {"h": PANEL_HEIGHT, "w": PANEL_WIDTH, "x": x, "y": y},
        "targets": [{"refId": "A", "datasource": DATASOURCE, "expr": dashboard_query(chosen.plan, quantity), "legendFormat": legend}],
        "fieldConfig": {"defaults": {"unit": GRAFANA_UNITS[quantity.quantity.unit]}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True}, "tooltip": {"mode": "multi"}},
    }


def dashboard(selection: Sequence[Selected], *, title: str = "Lens accelerators", uid: str = "lens-accelerators") -> dict[str, Any]:
    """The dashboard: an expanded row per hardware, then its quantities' panels, three to a line."""
    panels: list[dict[str, Any]] = []
    y, next_id = 0, 1
    for chosen in selection:
        panels.append({"id": next_id, "type": "row", "title": chosen.profile.display_name, "collapsed": False,
                       "gridPos": {"h": ROW_HEIGHT, "w": GRID_WIDTH, "x": 0, "y": y}, "panels": []})
        next_id, y = next_id + 1, y + ROW_HEIGHT
        per_line = GRID_WIDTH // PANEL_WIDTH
        for i, quantity in enumerate(chosen.plan.quantities):
            x = (i % per_line) * PANEL_WIDTH
            if i and x == 0:
                y += PANEL_HEIGHT
            panels.append(_panel(next_id, chosen, quantity, x, y))
            next_id += 1
        if chosen.plan.quantities:
            y += PANEL_HEIGHT
    return {
        "id": None,
        "uid": uid,
        "title": title,
        "tags": ["lens", "accelerators"],
        "timezone": "browser",
        "editable": True,
        "graphTooltip": 1,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "30s",
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "links": [],
        "annotations": {"list": []},
        "templating": {"list": [{"type": "datasource", "name": DATASOURCE_VARIABLE, "label": "Prometheus",
                                 "query": "prometheus", "current": {}, "hide": 0, "refresh": 1}]},
        "panels": panels,
    }
