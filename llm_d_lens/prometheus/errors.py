"""What can go wrong asking Prometheus, each with a stable code; every message names the server."""

from __future__ import annotations

from llm_d_lens.errors import LensError


class PrometheusUrlInvalid(LensError):
    code = "PROMETHEUS_URL_INVALID"
    http_status = 400


class PrometheusUnreachable(LensError):
    code = "PROMETHEUS_UNREACHABLE"
    http_status = 502


class PrometheusTimeout(LensError):
    code = "PROMETHEUS_TIMEOUT"
    http_status = 504


class PrometheusBadQuery(LensError):
    """Prometheus refused the query itself (``errorType: bad_data``); its own text is quoted."""

    code = "PROMETHEUS_BAD_QUERY"
    http_status = 502


class PrometheusQueryFailed(LensError):
    """Prometheus accepted the query but could not answer it (execution error, timeout, overload)."""

    code = "PROMETHEUS_QUERY_FAILED"
    http_status = 502


class PrometheusResponseInvalid(LensError):
    """Something answered, but not with the Prometheus HTTP API (or not with an instant vector)."""

    code = "PROMETHEUS_RESPONSE_INVALID"
    http_status = 502
