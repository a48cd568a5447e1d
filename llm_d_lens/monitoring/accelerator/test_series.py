"""Device series over a range: Prometheus' range queries and a recorded history give the same charts."""

from __future__ import annotations

import asyncio
import gzip
from importlib import resources

import pytest

from llm_d_lens.monitoring.accelerator.series import MAX_POINTS, grid, history_series, parse_history, read_series
from llm_d_lens.monitoring.accelerator.service import select
from llm_d_lens.monitoring.errors import SnapshotInvalid
from llm_d_lens.prometheus.client import PrometheusClient
from llm_d_lens.testing.prometheus import run_prometheus, skip_reason

MiB = 2**20
T0 = 1767225600  # 2026-01-01T00:00:00Z

DCGM_HISTORY = f"""
DCGM_FI_DEV_GPU_UTIL{{Hostname="n1",gpu="0",modelName="H100"}} 50 {T0 * 1000}
DCGM_FI_DEV_GPU_UTIL{{Hostname="n1",gpu="0",modelName="H100"}} 75 {(T0 + 60) * 1000}
DCGM_FI_DEV_FB_USED{{Hostname="n1",gpu="0",modelName="H100"}} 1024 {T0 * 1000}
DCGM_FI_DEV_FB_USED{{Hostname="n1",gpu="0",modelName="H100"}} 2048 {(T0 + 60) * 1000}
DCGM_FI_DEV_GPU_UTIL{{Hostname="n1",gpu="1",modelName="H100"}} 0 {T0 * 1000}
DCGM_FI_DEV_FB_USED{{Hostname="n1",gpu="1",modelName="H100"}} 0 {T0 * 1000}
"""


def test_a_history_is_read_in_common_units_per_device_and_instant():
    report = history_series(parse_history(DCGM_HISTORY, "hand-written"), select(["nvidia"]), start=T0, end=T0 + 60, step=60)
    devices = {d.name: d for d in report.devices}
    assert sorted(devices) == ["n1/0", "n1/1"]
    busy = devices["n1/0"]
    # DCGM reports utilisation in percent and framebuffer in MiB; the series are ratio and bytes
    assert busy.points["utilization_ratio"] == [(T0, 0.5), (T0 + 60, 0.75)]
    assert busy.points["memory_used_bytes"] == [(T0, 1024 * MiB), (T0 + 60, 2048 * MiB)]
    assert busy.model == "H100"
    assert devices["n1/1"].points["utilization_ratio"] == [(T0, 0.0)]
    document = report.to_dict()
    assert [q["unit"] for q in document["quantities"]] == ["ratio", "bytes"]


def test_quantities_and_node_narrow_a_history():
    history = parse_history(DCGM_HISTORY, "hand-written")
    report = history_series(history, select(["nvidia"]), start=T0, end=T0 + 60, quantities=["utilization"], node="n1")
    assert {name for d in report.devices for name in d.points} == {"utilization_ratio"}
    assert history_series(history, select(["nvidia"]), start=T0, end=T0 + 60, node="elsewhere").devices == []


def test_a_history_sample_without_a_timestamp_is_refused_naming_the_source():
    with pytest.raises(SnapshotInvalid) as caught:
        parse_history('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 5\n', "demo.prom")
    assert "demo.prom" in caught.value.message and "DCGM_FI_DEV_GPU_UTIL" in caught.value.message


@pytest.mark.parametrize(("span", "step", "expected"), [(3600, None, 60.0), (3600, 10, 10.0), (10**6, 1, 10**6 / MAX_POINTS)])
def test_the_grid_never_asks_for_more_points_than_the_cap(span, step, expected):
    assert grid(0, span, step)[2] == expected


def _openmetrics(history_text: str) -> str:
    """The demo history (millisecond timestamps) as backfillable OpenMetrics (seconds), series kept together."""
    lines = sorted((line.rsplit(" ", 2) for line in history_text.splitlines() if line.strip()),
                   key=lambda parts: (parts[0], int(parts[2])))
    return "\n".join(f"{name} {value} {int(ms) // 1000}" for name, value, ms in lines) + "\n# EOF\n"


@pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")
def test_prometheus_range_queries_and_the_recorded_history_chart_the_same_numbers():
    text = gzip.decompress(resources.files("llm_d_lens.monitoring.demo").joinpath("telemetry.prom.gz").read_bytes()).decode()
    history = parse_history(text, "demo").shifted(T0)
    shifted = "\n".join(
        f"{name} {value} {int(ms) + T0 * 1000}" for name, value, ms in (line.rsplit(" ", 2) for line in text.splitlines() if line)
    )
    selection = select(["nvidia", "amd", "intel-xpu", "intel-gaudi", "google-tpu"])
    start, end = T0 + 600, T0 + 1800

    async def from_prometheus(url: str):
        async with PrometheusClient(url) as client:
            return await read_series(client, selection, start=start, end=end, step=120)

    with run_prometheus(_openmetrics(shifted)) as server:
        live = asyncio.run(from_prometheus(server.url))
    recorded = history_series(history, selection, start=start, end=end, step=120)
    assert live.queries_sent == sum(1 + len(s.plan.quantities) for s in selection)  # one range query per quantity
    assert [d.name for d in live.devices] == [d.name for d in recorded.devices]
    assert len(live.devices) == 32 + 8 + 8 + 8 + 4
    for mine, theirs in zip(live.devices, recorded.devices):
        assert mine.points.keys() == theirs.points.keys()
        for field, points in mine.points.items():
            assert [t for t, _ in points] == [t for t, _ in theirs.points[field]] == list(range(start, end + 1, 120))
            assert [v for _, v in points] == pytest.approx([v for _, v in theirs.points[field]], rel=1e-9), (mine.name, field)
