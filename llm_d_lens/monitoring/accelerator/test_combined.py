"""One round trip per hardware: the combined refresh answers exactly what one query per quantity does.

Against the real Prometheus every built-in profile is read both ways and compared row by row (labels,
values and order of every part) and device by device: the refresh's own query (each metric read once,
the quantities finished in Python, :mod:`.refresh`) and each part sent as its own query, on the
shared exporter samples and on a generated cluster full of edge cases (absent metrics, NaN,
infinities, zeros, duplicate series, series the matchers drop). A fake Prometheus (httpx's mock
transport) then holds the refresh to the rows it cannot read and to exporter labels that clash
with the part tag.
"""

from __future__ import annotations

import asyncio
import math
import random
import re
from dataclasses import replace
from urllib.parse import parse_qs

import httpx
import pytest

from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.monitoring.accelerator.plan import plan_for
from llm_d_lens.monitoring.accelerator.queries import combinable, queries, refresh_parts
from llm_d_lens.monitoring.accelerator.refresh import read_refresh, refresh_query, selection_query, selections
from llm_d_lens.monitoring.accelerator.tilerows import TileRows
from llm_d_lens.monitoring.accelerator.service import Selected, read_devices, select
from llm_d_lens.monitoring.accelerator.test_conformance import BUILT_IN_WITH_SOURCES
from llm_d_lens.testing.telemetry_pages import needs_prometheus, refresh
from llm_d_lens.prometheus.client import PrometheusClient, Sample
from llm_d_lens.prometheus.combine import NAME_LABEL, PART_LABEL, query_each
from llm_d_lens.prometheus.errors import PrometheusResponseInvalid
from llm_d_lens.prometheus.promql import parse_matcher
from llm_d_lens.testing.prometheus import BASE_TIMESTAMP, run_prometheus, skip_reason, to_openmetrics
from llm_d_lens.testing.telemetry import series_for


def comparable(rows: list[Sample] | TileRows) -> list[tuple[tuple[tuple[str, str], ...], str]]:
    """Rows as (labels in the server's order, value spelled out): NaN compares equal to NaN."""
    return [(tuple(r.labels.items()), repr(r.value)) for r in (rows.samples() if isinstance(rows, TileRows) else rows)]


def refresh_both_ways(url: str, plan) -> tuple[dict[str, list[Sample]], dict[str, list[Sample]], int]:
    """The refresh's own query for ``plan`` (with the targets), and each of its parts sent alone."""
    async def run():
        async with PrometheusClient(url) as client:
            one = await read_refresh(client, plan, BASE_TIMESTAMP, targets=True)
            sent = client.queries_sent
            separate = await query_each(client, refresh_parts(plan, targets=True), BASE_TIMESTAMP)
            return one, separate, sent
    return asyncio.run(run())


def assert_same_parts(one: dict[str, list[Sample]], separate: dict[str, list[Sample]], hardware: str) -> None:
    assert list(one) == list(separate)
    for name in separate:
        assert comparable(one[name]) == comparable(separate[name]), (hardware, name)


@needs_prometheus
@pytest.mark.parametrize("hardware", BUILT_IN_WITH_SOURCES)
def test_the_refresh_query_answers_every_part_as_its_own_query_does(prometheus, hardware):
    plan = plan_for(get_registry().get(hardware))
    one, separate, sent = refresh_both_ways(prometheus.url, plan)
    assert sent == 1
    assert_same_parts(one, separate, hardware)
    assert sum(len(rows) for rows in separate.values()) > len(separate["inventory"]), "the fixtures answer quantities too"


def _violating(matchers: tuple[str, ...]) -> list[dict[str, str]]:
    """For each matcher, a label that fails it (the series an exporter adds and the profile means to drop)."""
    out = []
    for text in matchers:
        name, op, value = parse_matcher(text)
        bad = {"=": value + "-other", "!=": value, "=~": "lens-no-match", "!~": value.split("|")[0]}[op]
        out.append({name: bad})
    return out


def edge_cluster(seed: int = 11) -> str:
    """Every built-in profile's metrics on a few nodes, with a quarter of the series absent (so sums lose
    tiles and fallbacks answer), a fifth NaN, infinite or zero (so divisors are skipped), some duplicated
    with other values (so the aggregations collapse them), and series the matchers drop with huge values."""
    rng = random.Random(seed)
    specials = [math.nan, math.inf, -math.inf, 0.0, -0.0, 0.0]
    samples = []
    for chosen in select(BUILT_IN_WITH_SOURCES):
        subs = (None, "0", "1") if chosen.plan.folded else ("0",)
        for n in range(2):
            for index in range(3):
                for sub in subs:
                    for metric, labels, value in series_for(chosen.plan, f"{chosen.profile.id}-edge-{n}", index, rng, sub):
                        roll = rng.random()
                        if roll < 0.25:
                            continue
                        samples.append((metric, labels, rng.choice(specials) if roll < 0.45 else value))
                        if rng.random() < 0.2:
                            samples.append((metric, {**labels, "exporter_info_0": "duplicate"}, round(rng.uniform(-5, 5), 3)))
                        matchers = next(m for name, m in chosen.plan.metric_selectors() if name == metric)
                        samples.extend((metric, {**labels, **bad}, 1e9) for bad in _violating(matchers) if rng.random() < 0.5)
    unique = {(m, tuple(sorted(labels.items()))): (m, labels, v) for m, labels, v in samples}
    return to_openmetrics(unique.values())


@pytest.fixture(scope="module")
def edge_prometheus():
    if skip_reason():
        pytest.skip(skip_reason() or "")
    with run_prometheus(edge_cluster()) as server:
        yield server


@needs_prometheus
def test_on_edge_cases_the_refresh_query_answers_what_the_parts_answer(edge_prometheus):
    seen_fallback = seen_nan = 0
    for hardware in BUILT_IN_WITH_SOURCES:
        plan = plan_for(get_registry().get(hardware))
        one, separate, _ = refresh_both_ways(edge_prometheus.url, plan)
        assert_same_parts(one, separate, hardware)
        rows = [r for name, part in separate.items() if name not in ("inventory", "targets") for r in part]
        seen_fallback += sum("lens_fallback" in r.labels for r in rows)
        seen_nan += sum(math.isnan(r.value) for r in rows)
    assert seen_fallback and seen_nan, "the generated cluster reaches fallbacks and NaN"
    every = refresh(edge_prometheus.url, None), refresh(edge_prometheus.url, None, combined=False)
    assert every[0].devices and every[0].to_dict() == every[1].to_dict() | {"queries": every[0].queries_sent}


@needs_prometheus
@pytest.mark.parametrize("hardware", [*BUILT_IN_WITH_SOURCES, None])
def test_the_combined_refresh_reports_what_the_separate_queries_report(prometheus, hardware):
    chosen = [hardware] if hardware else None  # None: every hardware with device sources, as the console reads
    one, separate = refresh(prometheus.url, chosen), refresh(prometheus.url, chosen, combined=False)
    assert one.devices and one.to_dict()["devices"] == separate.to_dict()["devices"]
    assert (one.pods, one.warnings, one.hardware) == (separate.pods, separate.warnings, separate.hardware)
    assert one.queries_sent == 1 + len(one.hardware)  # the recorded selector (none here), then one per hardware
    assert separate.queries_sent == sum(len(queries(s.plan)) for s in select(chosen)) + 2  # the targets, the probe


# -- the fake Prometheus --------------------------------------------------------------------------

def tagged_selections(query) -> list[int]:
    return [part for part in query.tags.values() if type(part) is int]


def fake(answer: list[dict], sent: list[str]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(parse_qs(request.content.decode())["query"][0])
        return httpx.Response(200, json={"status": "success", "data": {"resultType": "vector", "result": answer}})
    return httpx.MockTransport(handle)


@pytest.mark.parametrize("hardware", BUILT_IN_WITH_SOURCES)
def test_the_refresh_query_reads_each_metric_once_per_matchers_and_aggregation(hardware):
    plan = plan_for(get_registry().get(hardware))
    query = refresh_query(plan, targets=True)
    chosen = selections(plan)
    read = [(s.matchers, s.aggregation, m) for s in chosen for m in s.metrics]
    assert len(read) == len(set(read)) == len({(src.matchers, src.aggregation, m) for q in plan.quantities
                                                for src in q.sources for m in src.metrics})
    for selection in chosen:
        assert query.promql.count(selection_query(plan, selection)) == 1
    # the inventory and the targets are tagged, and a selection only where another untagged one reads its metric
    assert query.promql.count(f'"{PART_LABEL}"') == len(query.tags)
    # joined on plain labels: VictoriaMetrics' or on(__name__, ...) ignores the name (test_engines.py)
    joins = re.findall(r" or on\(([^)]*)\)", query.promql)
    assert joins == [f"{NAME_LABEL}, {PART_LABEL}"] * (len(chosen) + len(query.tags) - len(tagged_selections(query)) - 1)
    assert query.promql.count(f'"{NAME_LABEL}"') == len(chosen)
    untagged = [s for i, s in enumerate(chosen) if i not in query.tags.values()]
    names = [m for s in untagged for m in s.metrics]
    assert len(names) == len(set(names)) and set(query.owners) == set(names)


NO_PART = "a series that no part of the refresh query answers"
UNASKED = "a series with labels the query does not ask for"  # a label amd's refresh groups by nothing on


@pytest.mark.parametrize(("labels", "why"), [({"hostname": "n1"}, NO_PART), ({"hostname": "n1", PART_LABEL: "nobody"}, UNASKED),
                                             ({"__name__": "unread", "hostname": "n1"}, UNASKED), ({"gpu": "0"}, UNASKED),
                                             ({"gpu": "0", PART_LABEL: "nobody"}, UNASKED)])
def test_a_row_no_part_of_the_refresh_query_answers_is_a_coded_error(labels, why):
    plan = plan_for(get_registry().get("amd"))
    sent: list[str] = []

    async def run():
        transport = fake([{"metric": labels, "value": [BASE_TIMESTAMP, "1"]}], sent)
        async with PrometheusClient("http://prometheus.test:9090", transport=transport) as client:
            return await read_refresh(client, plan, BASE_TIMESTAMP)
    with pytest.raises(PrometheusResponseInvalid) as caught:
        asyncio.run(run())
    assert caught.value.message.startswith(f"Prometheus at http://prometheus.test:9090 answered {why}: {labels!r} (query: ")
    assert sent == [caught.value.details["query"]] == [refresh_query(plan).promql]


@pytest.mark.parametrize("label", [PART_LABEL, NAME_LABEL])
def test_a_hardware_whose_exporter_labels_include_the_tag_is_read_one_query_per_part(label):
    """Combining would overwrite that exporter label (the part tag or the copied name), so this hardware keeps one query per part."""
    profile = get_registry().get("amd")
    plan = plan_for(profile)
    clashing = replace(plan, labels={**plan.labels, "serial": (label,)})
    assert combinable(plan) and not combinable(clashing)
    sent: list[str] = []

    async def run():
        async with PrometheusClient("http://prometheus.test:9090", transport=fake([], sent)) as client:
            return await read_devices(client, [Selected(profile, clashing)], at=BASE_TIMESTAMP, recorded=False)
    report = asyncio.run(run())
    assert report.queries_sent == len(sent) == len(queries(clashing)) + 1  # the pod labels bring the targets query
    assert sorted(sent) == sorted(refresh_parts(clashing, targets=True).values())  # each part as it is, untagged


def test_the_targets_query_rides_with_the_pod_reading_hardware_of_fewest_metrics_and_only_with_it():
    from llm_d_lens.monitoring.accelerator.service import refresh_plan

    amd, nvidia = select(["amd", "nvidia"])
    assert len(amd.plan.metric_selectors()) < len(nvidia.plan.metric_selectors())
    podless = Selected(amd.profile, replace(amd.plan, labels={k: v for k, v in amd.plan.labels.items() if k != "pod"}))
    assert [name for name, parts in refresh_plan([podless, nvidia]).items() if "targets" in parts] == ["nvidia"]
    assert [name for name, parts in refresh_plan([amd, nvidia]).items() if "targets" in parts] == ["amd"]
    assert [name for name, parts in refresh_plan([nvidia, amd]).items() if "targets" in parts] == ["amd"]
    assert [name for name, parts in refresh_plan([amd, amd]).items() if "targets" in parts] == ["amd"]
    assert not any("targets" in parts for parts in refresh_plan([podless]).values())


def test_a_value_that_is_no_number_in_a_refresh_answer_is_a_coded_error():
    plan = plan_for(get_registry().get("amd"))
    metric = refresh_query(plan).owners
    labels = {"__name__": next(iter(metric)), "hostname": "n1", NAME_LABEL: next(iter(metric))}

    async def run():
        transport = fake([{"metric": labels, "value": [BASE_TIMESTAMP, "high"]}], [])
        async with PrometheusClient("http://prometheus.test:9090", transport=transport) as client:
            return await read_refresh(client, plan, BASE_TIMESTAMP)
    with pytest.raises(PrometheusResponseInvalid) as caught:
        asyncio.run(run())
    assert caught.value.message.startswith("Prometheus at http://prometheus.test:9090 answered a malformed vector "
                                           "(could not convert string to float: 'high') (query: ")
