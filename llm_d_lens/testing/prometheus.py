"""A real Prometheus server for tests, fed by backfill or by scraping a local endpoint.

Backfill (``promtool tsdb create-blocks-from openmetrics``) makes data queryable within a fraction
of a second at fixed timestamps, so tests are fast and deterministic; scrape mode exercises the
whole path from an HTTP exporter. Everything binds to 127.0.0.1 on a free port, lives in a
temporary directory, and is stopped by the context manager.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from llm_d_lens.testing.processes import stop

#: A fixed evaluation time for backfilled samples (2026-01-01T00:00:00Z).
BASE_TIMESTAMP = 1767225600


def binaries() -> tuple[str | None, str | None]:
    return shutil.which("prometheus"), shutil.which("promtool")


def skip_reason() -> str | None:
    """Why a Prometheus test cannot run here, or None. CI installs Debian's ``prometheus``."""
    prometheus, promtool = binaries()
    if prometheus and promtool:
        return None
    return "needs the prometheus and promtool binaries (Debian package 'prometheus'; .ci/run installs it)"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def to_openmetrics(samples: Iterable[tuple[str, dict[str, str], float]], timestamp: int = BASE_TIMESTAMP) -> str:
    """OpenMetrics text of ``(metric, labels, value)`` samples, all at ``timestamp`` (seconds)."""
    lines = []
    for name, labels, value in samples:
        rendered = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
        lines.append(f"{name}{{{rendered}}} {value!r} {timestamp}" if rendered else f"{name} {value!r} {timestamp}")
    return "\n".join(lines) + "\n# EOF\n"


def exposition_to_openmetrics(text: str, timestamp: int = BASE_TIMESTAMP, repeat_every: int = 0, repeats: int = 1) -> str:
    """Exporter exposition text (as a ``/metrics`` page serves it) as backfillable OpenMetrics.

    Sample lines are kept exactly as written, names included: Prometheus' own text parser does not
    add ``_total`` to a counter (DCGM's energy counter has none), so neither may this. Comments are
    dropped (every family becomes untyped); each sample gets ``timestamp``, and, when
    ``repeat_every`` is set, ``repeats`` copies ``repeat_every`` seconds apart.
    """
    series = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        head, _, tail = line.rpartition("}") if "}" in line else ("", "", line)
        parts = tail.split()
        if head:
            series.append((head + "}", parts[0]))
        else:
            series.append((parts[0], parts[1]))
    # every sample of a series stays together, in time order, so families are never interleaved
    out = [f"{name} {value} {timestamp + i * repeat_every}" for name, value in series for i in range(repeats)]
    return "\n".join(out) + "\n# EOF\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


@dataclass
class PrometheusServer:
    url: str
    data_dir: Path
    process: subprocess.Popen[bytes]

    def query(self, promql: str, at: float | None = BASE_TIMESTAMP) -> list[dict]:
        """Raw ``/api/v1/query`` result list, for assertions independent of Lens' own client."""
        import json

        params = {"query": promql}
        if at is not None:
            params["time"] = str(at)
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{urllib.parse.urlencode(params)}", timeout=10) as r:
            body = json.load(r)
        return body["data"]["result"]


def _wait_ready(url: str, process: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"prometheus exited with code {process.returncode} before it was ready")
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.05)
    raise RuntimeError(f"prometheus at {url} was not ready within {timeout} s")


@contextmanager
def run_prometheus(
    openmetrics: str | None = None,
    *,
    scrape_targets: Iterable[str] = (),
    scrape_interval: str = "1s",
    workdir: str | os.PathLike[str] | None = None,
    rule_files: Iterable[str | os.PathLike[str]] = (),
    remote_write: str | None = None,
    blocks: Iterable[str | os.PathLike[str]] = (),
) -> Iterator[PrometheusServer]:
    """A Prometheus on 127.0.0.1, with ``openmetrics`` backfilled and/or scraping ``targets``.

    ``rule_files`` are evaluated every ``scrape_interval``; ``remote_write`` (a URL) receives every sample
    it stores, recorded ones included; ``blocks`` are directories of TSDB blocks (``promtool tsdb
    create-blocks-from``' output) copied into its data directory before it starts.
    """
    prometheus, promtool = binaries()
    if not (prometheus and promtool):
        raise RuntimeError(skip_reason())
    with tempfile.TemporaryDirectory(prefix="lens-prom-", dir=workdir) as tmp:
        root = Path(tmp)
        data = root / "data"
        data.mkdir()
        if openmetrics is not None:
            source = root / "in.om"
            source.write_text(openmetrics, encoding="utf-8")
            subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", "-q", str(source), str(data)],
                           check=True, capture_output=True, timeout=120)
        for directory in blocks:
            for block in Path(directory).iterdir():
                if block.is_dir():
                    shutil.copytree(block, data / block.name)
        targets = list(scrape_targets)
        rules = [str(Path(r).resolve()) for r in rule_files]
        lines = [f"global: {{scrape_interval: {scrape_interval}, evaluation_interval: {scrape_interval}}}"]
        if rules:
            lines.append("rule_files: [" + ", ".join(f'"{r}"' for r in rules) + "]")
        if remote_write:
            lines.append(f'remote_write: [{{url: "{remote_write}", queue_config: {{batch_send_deadline: 200ms}}}}]')
        if targets:
            rendered = ", ".join(f'"{t}"' for t in targets)
            lines.append(f"scrape_configs:\n  - job_name: lens-test\n    scrape_interval: {scrape_interval}\n"
                         f"    scrape_timeout: {scrape_interval}\n    static_configs: [{{targets: [{rendered}]}}]")
        else:
            lines.append("scrape_configs: []")
        config = root / "prometheus.yml"
        config.write_text("\n".join(lines) + "\n", encoding="utf-8")
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        process = subprocess.Popen(
            [prometheus, f"--config.file={config}", f"--storage.tsdb.path={data}",
             f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=100y", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            _wait_ready(url, process)
            yield PrometheusServer(url, data, process)
        finally:
            stop(process)


#: the time range of one TSDB block promtool's rule backfill writes (``--max-block-duration``'s default)
RULE_BLOCK_SECONDS = 2 * 3600


def backfill_rules(url: str, rules: str | os.PathLike[str], output: str | os.PathLike[str], start: float, end: float,
                   interval: str = "60s") -> Path:
    """The recording rules of ``rules`` evaluated over the Prometheus at ``url`` from ``start`` to ``end``, written
    as TSDB blocks into ``output`` (``promtool tsdb create-blocks-from rules``, Prometheus' own rule backfill).

    Two things of promtool's make a window that crosses a block boundary lose whole groups at random: a group is
    evaluated at ``interval``-aligned times shifted by a hash of its name and its file's path as given, and the
    backfill walks the window block by block and *stops* (2.42) at the first block part holding no evaluation
    time. A window starting less than ``interval`` before a boundary loses every group whose offset falls past the
    boundary. So the window must lie in one block (a ValueError otherwise), and promtool is handed the file's bare
    name from its own directory: each group's evaluation times depend only on the file name and the group names,
    not on the temporary directory a run puts them in.
    """
    tool = binaries()[1]
    if not tool:
        raise RuntimeError(promtool_skip_reason())
    if int(start) // RULE_BLOCK_SECONDS != int(end) // RULE_BLOCK_SECONDS:
        raise ValueError(f"rule backfill window {int(start)}..{int(end)} crosses a {RULE_BLOCK_SECONDS} s block boundary: "
                         "promtool would drop the groups whose evaluations miss the part before it")
    path = Path(rules).resolve()
    subprocess.run([tool, "tsdb", "create-blocks-from", "rules", "-q", f"--url={url}", f"--start={int(start)}",
                    f"--end={int(end)}", f"--eval-interval={interval}", f"--output-dir={Path(output).resolve()}", path.name],
                   cwd=path.parent, check=True, capture_output=True, timeout=300)
    return Path(output)


def wait_for_series(server: PrometheusServer, query: str, expected: set[str], label: str, at: float,
                    timeout: float = 20.0) -> None:
    """Wait until ``query`` at ``at`` answers a series for each value of ``label`` in ``expected`` (bounded), or
    raise a RuntimeError naming the values still missing."""
    deadline = time.monotonic() + timeout
    while True:
        found = {r["metric"].get(label, "") for r in server.query(query, at=at)}
        missing = expected - found
        if not missing:
            return
        if time.monotonic() >= deadline:
            raise RuntimeError(f"{server.url}: no {query} series with {label} {', '.join(sorted(missing))} at {at} "
                               f"within {timeout} s (found: {', '.join(sorted(found)) or 'none'})")
        time.sleep(0.1)


def promtool_skip_reason() -> str | None:
    """Why a rules test cannot run here, or None: it needs only ``promtool`` (Debian's ``prometheus`` package)."""
    if binaries()[1]:
        return None
    return "needs the promtool binary (Debian package 'prometheus'; .ci/run installs it)"


def promtool(*args: str, cwd: str | os.PathLike[str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``promtool args...``, its output captured as text; the caller reads the return code."""
    tool = binaries()[1]
    if not tool:
        raise RuntimeError(promtool_skip_reason())
    return subprocess.run([tool, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)


def series_notation(values: Iterable[float | None]) -> str:
    """promtool's ``input_series`` values: each sample written out (``_`` for none), one per interval."""
    return " ".join("_" if v is None else repr(float(v)) for v in values)


def victoria_metrics_binary() -> str | None:
    return shutil.which("victoria-metrics")


def victoria_metrics_skip_reason() -> str | None:
    """Why a VictoriaMetrics test cannot run here, or None. CI installs Debian's ``victoria-metrics``."""
    if victoria_metrics_binary():
        return None
    return "needs the victoria-metrics binary (Debian package 'victoria-metrics', single node; .ci/run installs it)"


def vmalert_binary() -> str | None:
    return shutil.which("vmalert")


def vmalert_skip_reason() -> str | None:
    """Why a vmalert test cannot run here, or None. Debian's ``victoria-metrics`` package ships ``/usr/bin/vmalert``."""
    if vmalert_binary() and victoria_metrics_binary():
        return None
    return "needs the vmalert and victoria-metrics binaries (both in Debian's package 'victoria-metrics'; .ci/run installs it)"


def _wait_healthy(url: str, process: subprocess.Popen[bytes], timeout: float = 20.0, name: str = "victoria-metrics") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with code {process.returncode} before it was ready")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=1) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{name} at {url} was not ready within {timeout} s")


@contextmanager
def run_victoria_metrics(
    *, scrape_targets: Iterable[str] = (), scrape_interval: str = "1s", workdir: str | os.PathLike[str] | None = None,
) -> Iterator[PrometheusServer]:
    """VictoriaMetrics single-node on 127.0.0.1, scraping ``scrape_targets`` with a Prometheus scrape config
    (none: it only stores what is written to it, e.g. by a Prometheus' ``remote_write`` to ``<url>/api/v1/write``).

    Its query API is Prometheus' (``/api/v1/query``), so the same :class:`PrometheusServer` handle reads
    it. ``-search.latencyOffset`` is cut from its 30 s default, or an instant query at "now" would not
    see the samples just scraped.
    """
    binary = victoria_metrics_binary()
    if not binary:
        raise RuntimeError(victoria_metrics_skip_reason())
    with tempfile.TemporaryDirectory(prefix="lens-vm-", dir=workdir) as tmp:
        root = Path(tmp)
        targets = list(scrape_targets)
        scrape = []
        if targets:
            rendered = ", ".join(f'"{t}"' for t in targets)
            config = root / "scrape.yml"
            config.write_text(
                f"global: {{scrape_interval: {scrape_interval}}}\n"
                f"scrape_configs:\n  - job_name: lens-test\n    static_configs: [{{targets: [{rendered}]}}]\n",
                encoding="utf-8",
            )
            scrape = [f"-promscrape.config={config}"]
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        process = subprocess.Popen(
            [binary, f"-storageDataPath={root / 'data'}", f"-httpListenAddr=127.0.0.1:{port}", *scrape,
             "-search.latencyOffset=0s", "-retentionPeriod=100y", "-loggerLevel=ERROR"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            _wait_healthy(url, process)
            yield PrometheusServer(url, root / "data", process)
        finally:
            stop(process)


@contextmanager
def run_vmalert(rules: str | os.PathLike[str], datasource: str, *, remote_write: str | None = None,
                evaluation_interval: str = "1s") -> Iterator[str]:
    """vmalert on 127.0.0.1 evaluating the rules file ``rules`` against ``datasource`` (a VictoriaMetrics' URL) every
    ``evaluation_interval``, writing what its recording rules record to ``remote_write`` (that URL's
    ``/api/v1/write``), flushed every second; yields its own URL. Alerting rules would need a notifier: give it
    recording rules only."""
    binary = vmalert_binary()
    if not binary:
        raise RuntimeError(vmalert_skip_reason())
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    write = [f"-remoteWrite.url={remote_write}", "-remoteWrite.flushInterval=1s"] if remote_write else []
    process = subprocess.Popen(
        [binary, f"-rule={rules}", f"-datasource.url={datasource}", *write, f"-evaluationInterval={evaluation_interval}",
         f"-httpListenAddr=127.0.0.1:{port}", "-loggerLevel=ERROR"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        _wait_healthy(url, process, name="vmalert")
        yield url
    finally:
        stop(process)


def vmalert_check(rules: str | os.PathLike[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``vmalert -dryRun -rule=<rules>``: parses every group and expression (MetricsQL) and exits; 0 when all parse."""
    binary = vmalert_binary()
    if not binary:
        raise RuntimeError(vmalert_skip_reason())
    return subprocess.run([binary, "-dryRun", f"-rule={rules}", "-loggerLevel=ERROR"], capture_output=True, text=True,
                          timeout=timeout, check=False)
