"""Where telemetry comes from when a command or request does not say: the environment.

``LENS_PROMETHEUS_URL``      the Prometheus to query (the API reads only this, never a URL from a request)
``LENS_PROMETHEUS_TIMEOUT``  seconds per query (default 10)
``LENS_TELEMETRY_DEMO``      ``1``: the embedded demo history instead of a Prometheus (``lens serve --demo``)
``LENS_CLUSTER_OBJECTS``     Kubernetes JSON files for the allocation joins, separated by the path
                             separator, or ``kubectl`` to read them from the current cluster
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from llm_d_lens import settings
from llm_d_lens.monitoring.errors import PrometheusNotConfigured
from llm_d_lens.prometheus.client import DEFAULT_TIMEOUT
from llm_d_lens.prometheus.errors import PrometheusUrlInvalid

KUBECTL = "kubectl"


@dataclass(frozen=True)
class TelemetrySettings:
    prometheus_url: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    cluster_objects: tuple[str, ...] = field(default_factory=tuple)
    demo: bool = False

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TelemetrySettings:
        raw_timeout = settings.text("LENS_PROMETHEUS_TIMEOUT", environ) or ""
        try:
            timeout = float(raw_timeout) if raw_timeout else DEFAULT_TIMEOUT
        except ValueError:
            raise PrometheusUrlInvalid(f"LENS_PROMETHEUS_TIMEOUT={raw_timeout!r} is not a number of seconds") from None
        if not 0 < timeout < math.inf:  # also false for NaN
            raise PrometheusUrlInvalid(
                f"LENS_PROMETHEUS_TIMEOUT={raw_timeout!r} must be a finite number of seconds more than 0")
        objects = tuple(p for p in (settings.text("LENS_CLUSTER_OBJECTS", environ) or "").split(os.pathsep) if p.strip())
        demo = settings.flag("LENS_TELEMETRY_DEMO", environ)
        return cls(settings.text("LENS_PROMETHEUS_URL", environ), timeout, objects, demo)

    def require_url(self, given: str | None = None) -> str:
        url = given or self.prometheus_url
        if not url:
            raise PrometheusNotConfigured(
                "no Prometheus to ask: pass --prometheus URL or set LENS_PROMETHEUS_URL (e.g. http://prometheus.monitoring:9090)"
            )
        return url
