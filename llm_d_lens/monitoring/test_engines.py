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
from llm_d_lens.testing.prometheus import PrometheusServer, run_prometheus, run_victoria_metrics, victoria_metrics_skip_reason

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


def readings(server: PrometheusServer, *, per_part: bool = False) -> dict[tuple[str, str, str, str], dict[str, float]]:
    """``lens telemetry devices -o json`` against ``server``: each device's numbers."""
    argv = ["telemetry", "devices", "--prometheus", server.url, "-o", "json", *(f"--hardware={h}" for h in HARDWARE)]
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main([*argv, *(["--per-part"] if per_part else [])]) == 0
    fields = [q.field for q in QUANTITIES]
    return {(d["hardware"], d["node"], d["device"], d["sub_device"] or ""): {f: d[f] for f in fields if d.get(f) is not None}
            for d in json.loads(buffer.getvalue())["devices"]}


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
