"""A deliberately small Prometheus instant-query client for the coverage check.

Only what coverage needs: build a selector with safely escaped label values, run one instant
query, and turn every way that can fail (nothing listening, an HTTP error, a PromQL error, a body
that is not Prometheus's) into a :class:`LensError` that names the server and the query.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from llm_d_lens.evaluate.errors import PrometheusQueryFailed, PrometheusUnreachable


def escape_label_value(value: str) -> str:
    """A PromQL string literal body: backslash, double quote and newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def selector(metric: str, matchers: Mapping[str, str] | None = None) -> str:
    """``metric{label="value",...}`` with every value escaped (names are validated by the profile)."""
    if not matchers:
        return metric
    inner = ",".join(f'{name}="{escape_label_value(value)}"' for name, value in sorted(matchers.items()))
    return f"{metric}{{{inner}}}"


@dataclass(frozen=True)
class Sample:
    labels: dict[str, str]
    value: float


def instant_query(base_url: str, promql: str, at: float | None = None, *, timeout: float = 10.0,
                  client: Any = None) -> list[Sample]:
    """The instant vector ``promql`` evaluates to at ``at`` (Unix seconds; now when None)."""
    import httpx

    url = base_url.rstrip("/") + "/api/v1/query"
    params = {"query": promql} | ({"time": repr(float(at))} if at is not None else {})
    try:
        if client is None:
            with httpx.Client(timeout=timeout) as own:
                response = own.get(url, params=params)
        else:
            response = client.get(url, params=params)
    except httpx.HTTPError as exc:
        raise PrometheusUnreachable(f"Prometheus at {base_url} did not answer: {exc or type(exc).__name__}",
                                    details={"url": base_url, "query": promql}) from None
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict) or "status" not in body:
        raise PrometheusQueryFailed(
            f"{base_url} answered HTTP {response.status_code} with something that is not a Prometheus API response "
            f"(is the URL the Prometheus server's root?)", details={"url": base_url, "query": promql})
    if body["status"] != "success":
        raise PrometheusQueryFailed(
            f"Prometheus at {base_url} rejected {promql!r}: {body.get('errorType', 'error')}: {body.get('error', '')}",
            details={"url": base_url, "query": promql, "error": body.get("error")})
    data = body.get("data") or {}
    if data.get("resultType") != "vector":
        raise PrometheusQueryFailed(f"{promql!r} gave a {data.get('resultType')} result, not an instant vector",
                                    details={"url": base_url, "query": promql})
    return [Sample(dict(item.get("metric") or {}), float(item["value"][1])) for item in data.get("result") or []]
