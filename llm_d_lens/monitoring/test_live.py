"""End to end from a live HTTP exporter: Prometheus scrapes it, Lens reads Prometheus; and a direct scrape.

Prometheus 2.42 scrapes a new target about 5.5 s after it starts, so this is the one slow test; it
polls Prometheus until the first scrape has landed (waiting on another process, not on Lens).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from llm_d_lens.cli.app import main
from llm_d_lens.testing.telemetry_pages import by_name, needs_prometheus, refresh, sample_text
from llm_d_lens.testing.prometheus import run_prometheus

FIRST_SCRAPE_DEADLINE = 30.0


@pytest.fixture(scope="module")
def exporter() -> Iterator[str]:
    """``host:port`` of a local exporter serving the DCGM sample on /metrics and the Gaudi one on /gaudi."""
    pages = {"/metrics": sample_text("dcgm-exporter.prom"), "/gaudi": sample_text("gaudi-metric-exporter.prom")}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's spelling
            body = pages.get(self.path)
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write((body or "not found").encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@needs_prometheus
def test_a_scraped_exporter_reads_in_common_units(exporter):
    with run_prometheus(scrape_targets=[exporter]) as server:
        deadline = time.monotonic() + FIRST_SCRAPE_DEADLINE
        while not server.query("DCGM_FI_DEV_GPU_UTIL", at=None) and time.monotonic() < deadline:
            threading.Event().wait(0.2)
        report = refresh(server.url, ["nvidia"], at=None)  # live data: evaluated now
    devices = by_name(report)
    assert sorted(devices) == ["gpu-node-01/0", "gpu-node-01/1"]
    busy = devices["gpu-node-01/0"]
    # the same sample values as the backfilled tests: 87 %, 73421 MiB, 612.35 W, 48213957123 mJ
    assert busy["utilization_ratio"] == 0.87
    assert busy["memory_used_bytes"] == 73421 * 2**20
    assert busy["power_watts"] == 612.35
    assert busy["energy_joules"] == 48213957123 / 1000
    assert busy["attribution"]["pod"] == "vllm-llama-3-1-8b-5f7d9c6b8-q2xkz"


def test_a_direct_scrape_takes_the_node_from_the_target(exporter, capsys):
    assert main(["telemetry", "devices", "--scrape", f"http://{exporter}/gaudi", "--hardware", "intel-gaudi",
                 "--mode", "plugin", "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["source"] == f"http://{exporter}/gaudi"
    # Gaudi's exporter has no node label: the scraped target's host stands in, as Prometheus' instance would
    assert [(d["node"], d["device"], d["power_watts"]) for d in report["devices"]] == [
        ("127.0.0.1", "0", 712.0), ("127.0.0.1", "1", 198.0)]


def test_a_direct_scrape_uses_the_profiles_scrape_path(exporter, capsys):
    assert main(["telemetry", "devices", "--scrape", f"http://{exporter}", "--hardware", "nvidia", "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["source"] == f"http://{exporter}/metrics"
    assert len(report["devices"]) == 2


def test_a_direct_scrape_of_a_missing_page_is_an_error(exporter, capsys):
    assert main(["telemetry", "devices", "--scrape", f"http://{exporter}/nothing", "--hardware", "nvidia"]) == 1
    assert "error: TELEMETRY_SNAPSHOT_UNREACHABLE: exporter at" in capsys.readouterr().err
