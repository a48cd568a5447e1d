"""A refresh reads the recording rules' series where they exist, and reports what the raw refresh reports.

Against a real Prometheus holding every sample and fixture page (the ``prometheus`` fixture) plus what
the generated recording rules record from them (Prometheus' own rule backfill, the
``recorded_prometheus`` fixture): the recorded refresh is one query, finds every built-in's series
but the one recorded by rules of another version, reads that one raw with a warning, and gives the
same devices, numbers, fallbacks, sentinel reasons, identities and pods as the raw refresh.
test_engines does the same on rules Prometheus evaluates live, read from Prometheus and from
VictoriaMetrics.
"""

from __future__ import annotations

from llm_d_lens.monitoring.accelerator.recorded import Recorded, recorded_labels, recorded_query, split_recorded, usable
from llm_d_lens.monitoring.accelerator.rules import recording_rules, rules_digest
from llm_d_lens.monitoring.accelerator.service import select
from llm_d_lens.monitoring.conftest import RECORDED_AT, STALE_RULES
from llm_d_lens.prometheus.answers import Row, converted_rows
from llm_d_lens.testing.telemetry_pages import needs_prometheus, refresh

EVERY = [s.profile.id for s in select(None)]


@needs_prometheus
def test_the_recorded_refresh_is_one_query_and_reports_what_the_raw_refresh_reports(recorded_prometheus):
    recorded = refresh(recorded_prometheus.url, at=RECORDED_AT)
    raw = refresh(recorded_prometheus.url, at=RECORDED_AT, recorded=False)
    assert recorded.recorded == [h for h in EVERY if h != STALE_RULES] and raw.recorded == []
    assert recorded.queries_sent == 2  # the recorded selector, then the one hardware whose series other rules made
    devices = recorded.to_dict()["devices"]
    assert devices == raw.to_dict()["devices"]
    assert {d["hardware"] for d in devices} == set(EVERY)
    # what the pages exercise came through the recorded series too
    assert any(d["fallbacks"] for d in devices) and any(d["unavailable"] for d in devices)
    assert any(d["exporter_pod"] for d in devices) and any(d["exporter_pods"] for d in devices)
    assert recorded.pods == raw.pods
    stale = [w for w in recorded.warnings if w not in raw.warnings]
    assert len(stale) == 1 and stale[0].startswith(f"{STALE_RULES}: ") and "another-version" in stale[0]
    assert [w for w in recorded.warnings if w in raw.warnings] == raw.warnings


@needs_prometheus
def test_every_built_in_read_from_its_recorded_series_alone(recorded_prometheus):
    for hardware in EVERY:
        if hardware == STALE_RULES:
            continue
        recorded, raw = refresh(recorded_prometheus.url, [hardware], at=RECORDED_AT), refresh(recorded_prometheus.url, [hardware], at=RECORDED_AT, recorded=False)
        assert (recorded.recorded, recorded.queries_sent) == ([hardware], 1)
        assert recorded.devices and recorded.to_dict()["devices"] == raw.to_dict()["devices"], hardware
        assert recorded.warnings == raw.warnings, hardware


@needs_prometheus
def test_without_recorded_series_the_probe_finds_none_and_the_raw_refresh_answers(prometheus):
    report = refresh(prometheus.url)
    assert report.recorded == [] and report.devices
    assert report.queries_sent == 1 + len(report.hardware)  # the probe, then one query per hardware
    assert not any("recorded" in w for w in report.warnings)


def test_the_recorded_selector_is_one_selector_of_the_selected_hardware():
    from dataclasses import replace

    plans = [s.plan for s in select(["nvidia", "intel-xpu"])]
    names = sorted({r["record"] for p in plans for r in recording_rules(p)})  # what the generated rules record
    selector = recorded_query(plans)
    assert selector.startswith('{__name__=~"') and selector.endswith('", lens_hardware=~"nvidia|intel-xpu"}')
    selected = selector[len('{__name__=~"'):selector.index('"', len('{__name__=~"'))].split("|")
    assert set(names) <= set(selected) and all(n.startswith("lens:accelerator_") for n in selected)  # nothing else's
    # a hardware id is matched literally, whatever characters a plugin's id holds
    assert recorded_query([replace(plans[0], hardware="a.b")]).endswith('lens_hardware=~"a\\\\.b"}')


def test_a_hardware_is_read_from_recorded_series_only_with_this_lens_digest():
    (nvidia,) = [s.plan for s in select(["nvidia"])]
    def inventory(digest: str | None) -> Row:
        labels = {"__name__": "lens:accelerator_inventory", "lens_hardware": "nvidia", "gpu": "0", "Hostname": "n1"}
        answer = {"resultType": "vector", "result": [{"metric": labels if digest is None else {**labels, "lens_rules": digest},
                                                      "value": [RECORDED_AT, "1"]}]}
        return converted_rows(answer, recorded_labels([nvidia]))[0]

    assert usable(nvidia, split_recorded([nvidia], [inventory(rules_digest(nvidia))])["nvidia"])
    assert not usable(nvidia, split_recorded([nvidia], [inventory("0123")])["nvidia"])
    assert not usable(nvidia, split_recorded([nvidia], [inventory(None)])["nvidia"])  # rules from before the digest
    assert not usable(nvidia, Recorded())  # no series: no rules, or no devices
    # one series of this Lens' rules beside one of other rules' (a rules change within the lookback): raw
    both = split_recorded([nvidia], [inventory(rules_digest(nvidia)), inventory("0123")])["nvidia"]
    assert not usable(nvidia, both)


def test_a_store_s_own_labels_on_recorded_series_are_skipped_and_their_rows_read():
    """A selector of stored series may come back with labels a store adds (a cluster, a replica): they are no
    recording's, so the rows are read as without them, and the kept rows lose neither their own labels nor values."""
    import asyncio

    import httpx

    from llm_d_lens.monitoring.accelerator.recorded import read_recorded
    from llm_d_lens.prometheus.client import PrometheusClient

    (nvidia,) = [s.plan for s in select(["nvidia"])]
    base = {"lens_hardware": "nvidia", "cluster": "east"}
    result = [{"metric": {**base, "__name__": "lens:accelerator_inventory", "gpu": "0", "Hostname": "n1",
                          "lens_rules": rules_digest(nvidia)}, "value": [RECORDED_AT, "1"]},
              {"metric": {**base, "__name__": "lens:accelerator_power_watts", "lens_node": "n1", "lens_device": "0"},
               "value": [RECORDED_AT, "+Inf"]}]

    async def run():
        answer = {"status": "success", "data": {"resultType": "vector", "result": result}}
        transport = httpx.MockTransport(lambda request: httpx.Response(200, json=answer))
        async with PrometheusClient("http://prometheus.test:9090", transport=transport) as client:
            return await read_recorded(client, [nvidia], RECORDED_AT)
    found, warnings = asyncio.run(run())
    assert warnings == [] and list(found) == ["nvidia"]
    assert [dict(r.labels) for r in found["nvidia"].rows["inventory"]] == [{"Hostname": "n1", "gpu": "0"}]
    assert found["nvidia"].values == {("n1", "0", ""): {"power_watts": float("inf")}}
