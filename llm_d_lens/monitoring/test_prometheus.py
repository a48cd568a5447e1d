"""Telemetry through the shared Prometheus client: the exporter samples as stored, an outage, literal node names."""

from __future__ import annotations

import asyncio

import pytest

from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.monitoring.accelerator.plan import plan_for
from llm_d_lens.monitoring.accelerator.queries import dashboard_query
from llm_d_lens.testing.telemetry_pages import by_name, needs_prometheus, refresh
from llm_d_lens.prometheus.client import PrometheusClient
from llm_d_lens.prometheus.errors import PrometheusUnreachable
from llm_d_lens.testing.prometheus import BASE_TIMESTAMP, run_prometheus, to_openmetrics


def query(url: str, promql: str, at: float | None = BASE_TIMESTAMP):
    async def run():
        async with PrometheusClient(url) as client:
            return await client.query(promql, at)
    return asyncio.run(run())


@needs_prometheus
def test_a_query_returns_the_exporters_labelled_samples(prometheus):
    rows = query(prometheus.url, 'DCGM_FI_DEV_POWER_USAGE{Hostname="gpu-node-01"}')
    assert sorted((r.labels["gpu"], r.value) for r in rows) == [("0", 612.35), ("1", 71.2)]


@needs_prometheus
def test_a_prometheus_that_stopped_is_unreachable():
    with run_prometheus(to_openmetrics([("lens_probe", {"a": "b"}, 1.0)])) as server:
        url = server.url
        assert query(url, "lens_probe")[0].value == 1.0
    with pytest.raises(PrometheusUnreachable):
        refresh(url, ["nvidia"])


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
