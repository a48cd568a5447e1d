"""Telemetry quantities: the fixed common unit each is reported in, and what a metric name may be.

Its own module because both the model's reading of the guide's short forms (``guide_forms.py``,
run on every decode) and the rules need them, and a decode must not import the rules.
"""

from __future__ import annotations

import re

#: The fixed common unit of every telemetry quantity.
QUANTITY_UNITS = {
    "utilization": "ratio", "memory_used": "bytes", "memory_total": "bytes", "power": "W",
    "energy": "J", "temperature": "celsius", "tensor_activity": "ratio",
    "memory_temperature": "celsius", "memory_bandwidth": "ratio", "ecc_corrected": "count", "ecc_uncorrected": "count",
    "pcie_replays": "count", "critical_event": "code",
    "pcie_throughput": "B/s", "link_throughput": "B/s", "link_errors": "count",
    "row_remap_failure": "flag", "remapped_rows_correctable": "count", "remapped_rows_uncorrectable": "count",
    "link_traffic": "count", "device_healthy": "flag", "links_up": "flag",
    "core_clock": "Hz", "memory_clock": "Hz", "power_limit": "W", "throttle_reasons": "bitmask",
    "power_throttle": "ratio", "thermal_throttle": "ratio", "link_data": "bytes", "pcie_traffic": "bytes",
    "pending_rows_correctable": "count", "pending_rows_uncorrectable": "count",
}
#: a Prometheus metric name (the exposition format's rule)
PROM_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*\Z", re.ASCII)
