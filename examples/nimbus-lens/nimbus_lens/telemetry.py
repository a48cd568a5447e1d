"""A derived telemetry quantity: memory headroom, which the Nimbus exporter does not publish."""

from typing import Any


class Headroom:
    def derive(self, profile: Any, devices: list[Any]) -> list[str]:
        for device in devices:
            total = device.values.get("memory_total_bytes")
            used = device.values.get("memory_used_bytes")
            if total is not None and used is not None:
                device.values["memory_free_bytes"] = total - used
        return []
