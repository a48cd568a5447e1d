"""Errors a user meets reading telemetry, each with a stable code."""

from __future__ import annotations

from typing import Any

from llm_d_lens.errors import LensError
from llm_d_lens.hardware.errors import render_value


class OptionInvalid(LensError):
    """A command option or request parameter Lens cannot use, named with the accepted forms."""

    code = "OPTION_INVALID"
    http_status = 400


class PrometheusNotConfigured(LensError):
    code = "PROMETHEUS_URL_MISSING"
    http_status = 400


class SnapshotUnreachable(LensError):
    code = "TELEMETRY_SNAPSHOT_UNREACHABLE"
    http_status = 502


class SnapshotInvalid(LensError):
    code = "TELEMETRY_SNAPSHOT_INVALID"
    http_status = 422


class DashboardExists(LensError):
    """The dashboard file asked for is already there; Lens never replaces it unless told to."""

    code = "DASHBOARD_FILE_EXISTS"
    http_status = 409


class RulesFileExists(LensError):
    """The rules file asked for is already there; Lens never replaces it unless told to."""

    code = "RULES_FILE_EXISTS"
    http_status = 409


class TelemetryNotDeclared(LensError):
    """The hardware asked for declares nothing Lens could read for this view."""

    code = "TELEMETRY_NOT_DECLARED"
    http_status = 422


class AccessModeUnknown(LensError):
    code = "TELEMETRY_MODE_UNKNOWN"
    http_status = 400


class ClusterObjectsInvalid(LensError):
    """A Kubernetes object Lens was given does not have the shape it needs; names where and what."""

    code = "CLUSTER_OBJECTS_INVALID"
    http_status = 422

    def __init__(self, source: str, where: str, message: str, value: Any = None):
        shown = f" (value: {render_value(value)})" if value is not None else ""
        super().__init__(f"{source}: {where}: {message}{shown}",
                         details={"source": source, "path": where, "value": value})


class RangeInvalid(LensError):
    """A time range (or the quantities asked of it) Lens cannot chart."""

    code = "TELEMETRY_RANGE_INVALID"
    http_status = 400
class TelemetryProviderUnknown(LensError):
    """A profile's ``telemetry.provider_id`` names no registered telemetry provider."""

    code = "TELEMETRY_PROVIDER_UNKNOWN"
    http_status = 422


class TelemetryProviderFailed(LensError):
    """A plugin's telemetry provider failed to load: the plugin's to fix, not the caller's."""

    code = "TELEMETRY_PROVIDER_FAILED"
    http_status = 502
