"""The Prometheus client: answers, Prometheus' own errors, a server that is down or is not Prometheus."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.monitoring.accelerator.plan import plan_for
from llm_d_lens.monitoring.accelerator.queries import dashboard_query
from llm_d_lens.monitoring.errors import (
    PrometheusBadQuery,
    PrometheusQueryFailed,
    PrometheusResponseInvalid,
    PrometheusTimeout,
    PrometheusUnreachable,
    PrometheusUrlInvalid,
)
from llm_d_lens.monitoring.prometheus.client import PrometheusClient
from llm_d_lens.monitoring.test_support import by_name, needs_prometheus, refresh
from llm_d_lens.testing.prometheus import BASE_TIMESTAMP, free_port, run_prometheus, to_openmetrics


def query(url: str, promql: str, at: float | None = BASE_TIMESTAMP, **options):
    async def run():
        async with PrometheusClient(url, **options) as client:
            return await client.query(promql, at)
    return asyncio.run(run())


def mocked(handler) -> httpx.MockTransport:
    return httpx.MockTransport(handler)


@needs_prometheus
def test_a_query_returns_labelled_samples(prometheus):
    rows = query(prometheus.url, 'DCGM_FI_DEV_POWER_USAGE{Hostname="gpu-node-01"}')
    assert sorted((r.labels["gpu"], r.value) for r in rows) == [("0", 612.35), ("1", 71.2)]


@needs_prometheus
def test_a_query_prometheus_cannot_parse_quotes_prometheus(prometheus):
    with pytest.raises(PrometheusBadQuery) as caught:
        query(prometheus.url, "sum(DCGM_FI_DEV_POWER_USAGE")
    assert "rejected the query" in caught.value.message and "parse error" in caught.value.message
    assert caught.value.details["error_type"] == "bad_data"


@needs_prometheus
def test_a_query_prometheus_cannot_evaluate_quotes_prometheus(prometheus):
    # arithmetic drops the metric name, leaving two series with one label set
    with pytest.raises(PrometheusQueryFailed) as caught:
        query(prometheus.url, '{__name__=~"DCGM_FI_DEV_GPU_TEMP|DCGM_FI_DEV_MEMORY_TEMP", Hostname="gpu-node-01"} * 1')
    assert "(execution)" in caught.value.message and "same labelset" in caught.value.message


def test_prometheus_down_is_unreachable_naming_the_url():
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(PrometheusUnreachable) as caught:
        query(url, "up")
    assert caught.value.message.startswith(f"cannot reach Prometheus at {url}")
    assert caught.value.code == "PROMETHEUS_UNREACHABLE" and caught.value.http_status == 502


@needs_prometheus
def test_a_prometheus_that_stopped_is_unreachable():
    with run_prometheus(to_openmetrics([("lens_probe", {"a": "b"}, 1.0)])) as server:
        url = server.url
        assert query(url, "lens_probe")[0].value == 1.0
    with pytest.raises(PrometheusUnreachable):
        refresh(url, ["nvidia"])


def test_a_slow_prometheus_times_out_with_the_limit_in_the_message():
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(PrometheusTimeout, match=r"did not answer within 2.5 s"):
        query("http://prometheus.test:9090", "up", timeout=2.5, transport=mocked(handler))


def test_something_that_is_not_prometheus_is_said_to_be_so():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html><body>Grafana</body></html>")

    with pytest.raises(PrometheusResponseInvalid, match="not the Prometheus API") as caught:
        query("http://grafana.test", "up", transport=mocked(handler))
    assert "Grafana" in caught.value.message


def test_queries_go_out_as_form_posts_with_the_time():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.path, dict(httpx.QueryParams(request.content.decode()))))
        return httpx.Response(200, json={"status": "success", "data": {"resultType": "scalar", "result": [0, "NaN"]}})

    rows = query("http://prometheus.test:9090/prefix/", "vector(1)", at=1767225600.5, transport=mocked(handler))
    assert seen == [("POST", "/prefix/api/v1/query", {"query": "vector(1)", "time": "1767225600.5"})]
    assert len(rows) == 1 and rows[0].value != rows[0].value  # NaN arrives as a float NaN


@pytest.mark.parametrize("url", ["prometheus:9090", "ftp://prometheus", "http://", "http://p:9090/?x=1"])
def test_a_url_that_is_not_http_is_refused(url):
    with pytest.raises(PrometheusUrlInvalid):
        PrometheusClient(url)


@needs_prometheus
@pytest.mark.parametrize("attempt", ['gpu-node-01"} or vector(1) or {a="', "gpu-node-01\\", "gpu-node-.*", "$1"])
def test_a_node_in_dashboard_promql_stays_a_literal(prometheus, attempt):
    plan = plan_for(get_registry().get("nvidia"))
    power = next(q for q in plan.quantities if q.quantity.key == "power")
    assert prometheus.query(dashboard_query(plan, power, node=attempt), at=BASE_TIMESTAMP) == []
    assert refresh(prometheus.url, ["nvidia"], node=attempt).devices == []


@needs_prometheus
def test_a_node_name_with_dollar_signs_and_quotes_matches_exactly():
    odd = 'node$1"x'
    samples = [("DCGM_FI_DEV_POWER_USAGE", {"Hostname": odd, "gpu": "0", "UUID": "GPU-1"}, 100.0),
               ("DCGM_FI_DEV_POWER_USAGE", {"Hostname": "plain", "gpu": "0", "UUID": "GPU-2"}, 200.0)]
    plan = plan_for(get_registry().get("nvidia"))
    power = next(q for q in plan.quantities if q.quantity.key == "power")
    with run_prometheus(to_openmetrics(samples)) as server:
        rows = server.query(dashboard_query(plan, power, node=odd))
        devices = by_name(refresh(server.url, ["nvidia"], node=odd))
    assert [(r["metric"]["lens_node"], float(r["value"][1])) for r in rows] == [(odd, 100.0)]
    assert {name: d["power_watts"] for name, d in devices.items()} == {f"{odd}/0": 100.0}
