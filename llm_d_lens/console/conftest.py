"""The hardware tests' plugin factory, for pages that show a plugin's profile."""

from llm_d_lens.hardware.conftest import _forget_registry, fresh_registry, plugins  # noqa: F401

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from llm_d_lens.console.data import refresh_seconds
from llm_d_lens.testing.plugins import minimal_profile
from llm_d_lens.testing.console import CHROMIUM, CHROMIUM_ARGS, lens_serve  # noqa: F401 - the tests' server
from llm_d_lens.testing.prometheus import run_prometheus, skip_reason

REPO = Path(__file__).resolve().parents[2]
#: The shared exporter samples the browser tests' Prometheus scrapes, one target each.
SAMPLES = ("dcgm-exporter.prom", "amd-device-metrics-exporter.prom", "intel-xpumanager.prom", "gaudi-metric-exporter.prom", "vllm.prom")


def telemetry_dir() -> Path | None:
    for candidate in (os.environ.get("LENS_SHARED_TELEMETRY"), str(REPO / ".." / "shared" / "telemetry")):
        if candidate and Path(candidate, SAMPLES[0]).is_file():
            return Path(candidate)
    return None


needs_chromium = pytest.mark.skipif(not Path(CHROMIUM).is_file(),
                                    reason=f"needs Debian's Chromium at {CHROMIUM} (apt-get install chromium; .ci/run installs it)")


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator[object]:
    """One headless Debian Chromium per module, with its profile and caches in a temporary directory.

    Module-scoped on purpose: Playwright's sync API keeps an event loop running in this thread
    while it is open, and every later test that calls ``asyncio.run`` would fail.
    """
    from playwright.sync_api import sync_playwright

    home = tmp_path_factory.mktemp("chromium-home")
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache")}
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, env=env)
        yield launched
        launched.close()


def _static_page(text: str) -> tuple[ThreadingHTTPServer, str]:
    body = text.encode()

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"127.0.0.1:{server.server_address[1]}"


@pytest.fixture(scope="session")
def scraping_prometheus(tmp_path_factory) -> Iterator[str]:
    """A real Prometheus scraping every shared exporter sample each second, with data already in it."""
    if skip_reason():
        pytest.skip(skip_reason() or "")
    folder = telemetry_dir()
    if folder is None:
        pytest.skip("needs the shared exporter samples (../shared/telemetry or $LENS_SHARED_TELEMETRY)")
    pages = [_static_page((folder / name).read_text()) for name in SAMPLES]
    try:
        with run_prometheus(scrape_targets=[target for _, target in pages], workdir=tmp_path_factory.mktemp("prom")) as server:
            deadline = time.monotonic() + 60
            while not server.query("count(DCGM_FI_DEV_GPU_UTIL)", at=None) or len(server.query("DCGM_FI_DEV_GPU_UTIL[10s]", at=None)[0]["values"]) < 3:
                if time.monotonic() > deadline:
                    raise RuntimeError("Prometheus scraped nothing within 60 s")
                time.sleep(0.5)
            # the console's charts end at the last whole refresh step (console.data.now_step): wait until one began
            # after the first scrape, so a chart has points from the first page on
            first = min(float(t) for t, _ in server.query("DCGM_FI_DEV_GPU_UTIL[1m]", at=None)[0]["values"])
            step = refresh_seconds()
            time.sleep(max(0.0, (first // step + 1) * step - time.time()))
            yield server.url
    finally:
        for page, _ in pages:
            page.shutdown()


def _plugin_source(root: Path, dist: str, payloads: dict[str, dict], module_source: str = "") -> Path:
    """A real, pip-installable plugin distribution: pyproject, package with its profile JSON as package data."""
    package = dist.replace("-", "_")
    src = root / dist
    (src / package).mkdir(parents=True)
    loaders = []
    for profile_id, payload in payloads.items():
        (src / package / f"{profile_id}.json").write_text(json.dumps(payload))
        loaders.append(f'def load_{profile_id.replace("-", "_")}():\n'
                       f'    return [json.loads((HERE / "{profile_id}.json").read_text())]\n')
    (src / package / "__init__.py").write_text("import json, pathlib\nHERE = pathlib.Path(__file__).parent\n"
                                               + module_source + "\n" + "\n".join(loaders))
    entry_points = "\n".join(f'{pid} = "{package}:load_{pid.replace("-", "_")}"' for pid in payloads)
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{dist}"\nversion = "1.0.0"\n\n'
        f'[project.entry-points."llm_d_lens.hardware.profiles"]\n{entry_points}\n\n'
        f'[tool.setuptools]\npackages = ["{package}"]\n[tool.setuptools.package-data]\n{package} = ["*.json"]\n'
    )
    return src


ACME_TELEMETRY = {
    "provider_id": "declarative",
    "device_metric_sources": {
        "power": {"metrics": ["acme_npu_power_milliwatts"], "unit": "mW", "output_unit": "W"},
        "utilization": {"metrics": ["acme_npu_busy_percent"], "unit": "percent", "output_unit": "ratio"},
    },
    "label_schema": {"node": "node", "device": "npu"},
}
ACME = minimal_profile("acme-npu", display_name="Acme Inference NPU", telemetry=ACME_TELEMETRY,
                       ui={"icon": "Server", "order": 60, "labels": {"vendor": "Acme", "metric_group": "NPU"},
                           "telemetry_panel": {"quantity": "power", "namespace": "acme-serving"}})
EVIL = minimal_profile("evil-npu", display_name='Evil <img src=x onerror="window.__pwned=1">',
                       ui={"icon": "Chip", "order": 70, "labels": {"vendor": "<script>window.__pwned=2</script>",
                                                                   "metric_group": "<b onmouseover=alert(1)>NPU</b>"}})


@pytest.fixture(scope="session")
def plugin_site(tmp_path_factory) -> Path:
    """Three plugins pip-installed into one directory: a clean one, one with markup in its ui block, one that fails to import."""
    root = tmp_path_factory.mktemp("plugins")
    sources = [_plugin_source(root, "lens-acme", {"acme-npu": ACME}), _plugin_source(root, "lens-evil", {"evil-npu": EVIL}),
               _plugin_source(root, "lens-broken", {"broken-npu": minimal_profile("broken-npu")},
                              module_source='raise ImportError("lens-broken needs the acme SDK, which is not installed")\n')]
    site = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(site),
                    *map(str, sources)], check=True, capture_output=True, timeout=300)
    return site
