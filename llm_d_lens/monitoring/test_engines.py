"""The same refresh against the two engines fleets run: Prometheus and VictoriaMetrics single-node.

Both scrape one local exporter serving the shared samples of every built-in on one page; Lens reads
each and must report the same devices with the same numbers, with the one combined query per
hardware and with ``--per-part``. VictoriaMetrics' query API is Prometheus', its engine MetricsQL,
and one difference matters: ``a or on(__name__, t) b`` ignores the metric name there (Debian's
1.79), so a combined query joined on the name lost the parts sharing a hardware's label set. The
refresh copies the name into ``lens_metric`` and joins on that; the characterisation test below
pins the engine difference it works around and fails once the engine agrees.
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from llm_d_lens.cli.app import main
from llm_d_lens.monitoring.accelerator.plan import QUANTITIES
from llm_d_lens.testing.telemetry_pages import fixture_text, needs_prometheus, sample_text
from llm_d_lens.testing.prometheus import (
    PrometheusServer, run_prometheus, run_victoria_metrics, run_vmalert, victoria_metrics_skip_reason, vmalert_check,
    vmalert_skip_reason,
)

HARDWARE = ["nvidia", "amd", "intel-xpu", "intel-gaudi", "google-tpu"]
FIRST_SCRAPE_DEADLINE = 40.0


@pytest.fixture(scope="module")
def exporter() -> Iterator[str]:
    """``host:port`` of an exporter whose /metrics page holds every built-in's sample."""
    page = "".join(text if text.endswith("\n") else text + "\n" for text in (
        sample_text("dcgm-exporter.prom"), sample_text("amd-device-metrics-exporter.prom"),
        sample_text("intel-xpumanager.prom"), sample_text("gaudi-metric-exporter.prom"), fixture_text("tpu-v6e.prom"),
    ))

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's spelling
            found = self.path == "/metrics"
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(page.encode() if found else b"not found")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def scraped(server: PrometheusServer) -> None:
    """Wait (on the other process) until a scrape of every family has landed."""
    deadline = time.monotonic() + FIRST_SCRAPE_DEADLINE
    while time.monotonic() < deadline:
        if server.query("DCGM_FI_DEV_GPU_UTIL", at=None) and server.query("duty_cycle", at=None):
            time.sleep(1.5)  # one more scrape interval: every series of the page is in
            return
        time.sleep(0.2)
    raise AssertionError(f"{server.url} scraped nothing within {FIRST_SCRAPE_DEADLINE} s")


def report(server: PrometheusServer, *options: str) -> dict:
    """``lens telemetry devices -o json`` against ``server``, as its JSON."""
    argv = ["telemetry", "devices", "--prometheus", server.url, "-o", "json", *(f"--hardware={h}" for h in HARDWARE)]
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main([*argv, *options]) == 0
    return json.loads(buffer.getvalue())


def numbers(document: dict) -> dict[tuple[str, str, str, str], dict[str, float]]:
    fields = [q.field for q in QUANTITIES]
    return {(d["hardware"], d["node"], d["device"], d["sub_device"] or ""): {f: d[f] for f in fields if d.get(f) is not None}
            for d in document["devices"]}


def readings(server: PrometheusServer, *, per_part: bool = False) -> dict[tuple[str, str, str, str], dict[str, float]]:
    """Each device's numbers in ``lens telemetry devices -o json`` against ``server``."""
    return numbers(report(server, *(["--per-part"] if per_part else [])))


needs_both = [needs_prometheus, pytest.mark.skipif(victoria_metrics_skip_reason() is not None, reason=victoria_metrics_skip_reason() or "")]


@pytest.fixture(scope="module")
def engines(exporter) -> Iterator[tuple[PrometheusServer, PrometheusServer]]:
    with run_prometheus(scrape_targets=[exporter]) as prometheus, run_victoria_metrics(scrape_targets=[exporter]) as victoria:
        scraped(prometheus)
        scraped(victoria)
        yield prometheus, victoria


def _marks(test):
    for mark in needs_both:
        test = mark(test)
    return test


@_marks
def test_prometheus_and_victoria_metrics_give_the_same_devices_and_numbers(engines):
    prometheus, victoria = engines
    on_prometheus = readings(prometheus)
    assert readings(prometheus, per_part=True) == on_prometheus  # the two ways of asking agree on Prometheus
    assert {h for h, *_ in on_prometheus} == set(HARDWARE)  # every built-in's sample was read
    for per_part in (False, True):  # the combined query (joined on lens_metric) and one query per part
        on_victoria = readings(victoria, per_part=per_part)
        assert on_victoria.keys() == on_prometheus.keys(), per_part
        for key, values in on_prometheus.items():
            assert on_victoria[key].keys() == values.keys(), (per_part, key)
            assert all(on_victoria[key][f] == pytest.approx(v, rel=1e-12) for f, v in values.items()), (per_part, key)
        # the numbers are the samples', in common units (the DCGM sample's busy GPU: 87 %, 612.35 W)
        busy = on_victoria[("nvidia", "gpu-node-01", "0", "")]
        assert busy["utilization_ratio"] == 0.87 and busy["power_watts"] == 612.35


@_marks
def test_victoria_metrics_or_on_name_ignores_the_metric_name(engines):
    """Why the combined refresh joins on lens_metric: on __name__, the right side's series of another name are dropped."""
    prometheus, victoria = engines
    query = ('max by (__name__, gpu) ({__name__=~"DCGM_FI_DEV_GPU_UTIL"}) or on(__name__, gpu) '
             'max by (__name__, gpu) ({__name__=~"DCGM_FI_DEV_POWER_USAGE"})')
    def names(engine: PrometheusServer) -> set[str]:
        return {r["metric"].get("__name__") for r in engine.query(query, at=None)}

    assert names(prometheus) == {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE"}
    assert names(victoria) == {"DCGM_FI_DEV_GPU_UTIL"}


@pytest.fixture(scope="module")
def evaluating(exporter, tmp_path_factory) -> Iterator[tuple[PrometheusServer, PrometheusServer]]:
    """A Prometheus scraping the exporter with Lens' generated rules loaded (``rule_files``, evaluated every second),
    writing everything it stores, recorded series included, to a VictoriaMetrics (``remote_write``): single-node
    VictoriaMetrics evaluates no rules itself, so it holds what Prometheus' rules recorded, as behind a fleet's
    Prometheus (``vm_evaluating`` has vmalert evaluate them on VictoriaMetrics instead)."""
    from llm_d_lens.monitoring.accelerator.rules import HARDWARE_LABEL, INVENTORY_RECORD, rules_file, to_yaml
    from llm_d_lens.monitoring.accelerator.service import select
    from llm_d_lens.testing.prometheus import wait_for_series

    rules = tmp_path_factory.mktemp("live-rules") / "rules.yaml"
    rules.write_text(to_yaml(rules_file(select(HARDWARE)), "test"), encoding="utf-8")
    with run_victoria_metrics() as victoria, run_prometheus(
        scrape_targets=[exporter], rule_files=[rules], remote_write=f"{victoria.url}/api/v1/write",
    ) as prometheus:
        for server in (prometheus, victoria):
            wait_for_series(server, INVENTORY_RECORD, set(HARDWARE), HARDWARE_LABEL, at=None, timeout=FIRST_SCRAPE_DEADLINE)
        time.sleep(2.5)  # two more evaluations: every group has recorded from a complete scrape, and it is written on
        yield prometheus, victoria


@_marks
def test_rules_evaluated_live_give_the_raw_numbers_on_prometheus_and_on_victoria_metrics(evaluating):
    prometheus, victoria = evaluating
    raw = report(prometheus, "--raw")
    assert not raw.get("recorded") and {h for h, *_ in numbers(raw)} == set(HARDWARE)
    for engine in (prometheus, victoria):
        recorded = report(engine)
        assert recorded["recorded"] == HARDWARE, engine.url  # every hardware read from its recorded series
        assert recorded["queries"] == 1, engine.url
        found, expected = numbers(recorded), numbers(raw)
        assert found.keys() == expected.keys(), engine.url
        for key, values in expected.items():
            assert found[key].keys() == values.keys(), (engine.url, key)
            assert all(found[key][f] == pytest.approx(v, rel=1e-12) for f, v in values.items()), (engine.url, key)
        assert [d["fallbacks"] for d in recorded["devices"]] == [d["fallbacks"] for d in raw["devices"]], engine.url
        assert [d["unavailable"] for d in recorded["devices"]] == [d["unavailable"] for d in raw["devices"]], engine.url


needs_vmalert = pytest.mark.skipif(vmalert_skip_reason() is not None, reason=vmalert_skip_reason() or "")


@needs_vmalert
def test_vmalert_parses_every_built_ins_rules_and_refuses_a_broken_one(tmp_path):
    """vmalert (Debian's victoria-metrics package ships it) reads the generated rules file, alerts included, as MetricsQL."""
    from llm_d_lens.monitoring.accelerator.rules import rules_file, to_yaml
    from llm_d_lens.monitoring.accelerator.service import select

    rules = tmp_path / "rules.yaml"
    rules.write_text(to_yaml(rules_file(select(None)), "test"), encoding="utf-8")
    checked = vmalert_check(rules)
    assert checked.returncode == 0, checked.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text(rules.read_text(encoding="utf-8").replace("expr: ", "expr: sum(", 1), encoding="utf-8")
    assert vmalert_check(broken).returncode != 0  # the check reads the expressions: a broken one fails it


@pytest.fixture(scope="module")
def vm_evaluating(exporter, tmp_path_factory) -> Iterator[PrometheusServer]:
    """A VictoriaMetrics scraping the exporter, with vmalert evaluating Lens' generated recording rules on it (every
    second, MetricsQL's engine) and writing what they record back into it: rules evaluated with no Prometheus at all."""
    from llm_d_lens.monitoring.accelerator.rules import HARDWARE_LABEL, INVENTORY_RECORD, rules_file, to_yaml
    from llm_d_lens.monitoring.accelerator.service import select
    from llm_d_lens.testing.prometheus import wait_for_series

    rules = tmp_path_factory.mktemp("vmalert-rules") / "rules.yaml"
    rules.write_text(to_yaml(rules_file(select(HARDWARE), alerts=False), "test"), encoding="utf-8")
    with run_victoria_metrics(scrape_targets=[exporter]) as victoria:
        scraped(victoria)
        with run_vmalert(rules, victoria.url, remote_write=victoria.url):
            wait_for_series(victoria, INVENTORY_RECORD, set(HARDWARE), HARDWARE_LABEL, at=None, timeout=FIRST_SCRAPE_DEADLINE)
            time.sleep(2.5)  # two more evaluations, flushed: every group has recorded from a complete scrape
            yield victoria


@pytest.mark.skipif(vmalert_skip_reason() is not None, reason=vmalert_skip_reason() or "")
@_marks
def test_rules_vmalert_evaluates_on_victoria_metrics_give_the_raw_numbers(vm_evaluating):
    raw = report(vm_evaluating, "--raw")
    assert not raw.get("recorded") and {h for h, *_ in numbers(raw)} == set(HARDWARE)
    recorded = report(vm_evaluating)
    assert recorded["recorded"] == HARDWARE and recorded["queries"] == 1  # every hardware from its recorded series
    found, expected = numbers(recorded), numbers(raw)
    assert found.keys() == expected.keys()
    for key, values in expected.items():
        assert found[key].keys() == values.keys(), key
        assert all(found[key][f] == pytest.approx(v, rel=1e-12) for f, v in values.items()), key
    assert [d["fallbacks"] for d in recorded["devices"]] == [d["fallbacks"] for d in raw["devices"]]
    assert [d["unavailable"] for d in recorded["devices"]] == [d["unavailable"] for d in raw["devices"]]
