"""Charts as SVG geometry computed on the server: lines over time and capacity bars.

The template only places what is computed here (polyline points, tick positions and labels), so
a chart is readable without JavaScript, and the numbers drawn are the numbers in its table.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from llm_d_lens.console.format import clock, display_unit, number, quantity, scaled

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 56, 24, 12, 28
PALETTE = 10  # CSS classes s0..s9


@dataclass
class Line:
    name: str
    css: str
    points: str  # SVG polyline points
    values: list[tuple[float, float]]  # (t, value in the common unit)
    latest: str


@dataclass
class LineChart:
    title: str
    unit: str  # the display unit (%, GiB, W, °C)
    key: str
    common_unit: str = "ratio"  # the unit the values are in (ratio, bytes, W...)
    width: int = WIDTH
    height: int = HEIGHT
    x_ticks: list[tuple[float, str]] = field(default_factory=list)
    y_ticks: list[tuple[float, str]] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    hidden: int = 0  # series left out of the drawing (still listed in the table)
    times: list[float] = field(default_factory=list)
    plot: tuple[int, int, int, int] = (LEFT, TOP, WIDTH - RIGHT, HEIGHT - BOTTOM)

    @property
    def empty(self) -> bool:
        return not self.lines

    def table(self) -> list[tuple[str, list[str]]]:
        """The numbers behind the chart: one row per instant, a cell per drawn series."""
        rows = []
        for t in self.times:
            cells = []
            for line in self.lines:
                value = next((v for at, v in line.values if at == t), None)
                cells.append(quantity(value, self.common_unit))
            rows.append((clock(t), cells))
        return rows


def natural(name: str) -> list[tuple[int, int, str]]:
    """Sort key putting ``n/2`` before ``n/10``."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name) if part]


def nice_ceiling(value: float) -> float:
    """The smallest round number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten) at or above ``value``."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if value <= step * power + 1e-12:
            return step * power
    return 10 * power


def line_chart(title: str, key: str, unit: str, series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
               start: float, end: float, *, limit: int = 12) -> LineChart:
    """One line per series; at most ``limit`` drawn, the busiest first (by latest value)."""
    shown = display_unit(unit)
    chart = LineChart(title=title, unit=shown, key=key, common_unit=unit)
    x0, y0, x1, y1 = chart.plot
    ordered = sorted(series, key=lambda s: -(s[1][-1][1] if s[1] else 0))
    drawn, chart.hidden = ordered[:limit], max(len(ordered) - limit, 0)
    top = 100.0 if unit == "ratio" else nice_ceiling(max((scaled(v, unit) for _, pts in drawn for _, v in pts), default=0))
    span = max(end - start, 1.0)

    def x(t: float) -> float:
        return x0 + (t - start) / span * (x1 - x0)

    def y(v: float) -> float:
        return y1 - min(max(scaled(v, unit) / top, 0.0), 1.0) * (y1 - y0)

    for index, (name, points) in enumerate(sorted(drawn, key=lambda s: natural(s[0]))):
        if not points:
            continue
        chart.lines.append(Line(
            name=name, css=f"s{index % PALETTE}", values=list(points),
            points=" ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in points),
            latest=quantity(points[-1][1], unit),
        ))
    chart.times = sorted({t for line in chart.lines for t, _ in line.values})
    chart.y_ticks = [(y1 - i / 4 * (y1 - y0), number(top * i / 4, 0 if top >= 10 else 1)) for i in range(5)]
    ticks = 6
    chart.x_ticks = [(x(start + i / ticks * span), clock(start + i / ticks * span)) for i in range(ticks + 1)]
    return chart


@dataclass
class Bar:
    label: str
    allocated: float
    free: float
    allocated_width: float
    free_width: float


@dataclass
class BarChart:
    bars: list[Bar]
    width: int = WIDTH
    row: int = 28
    label_width: int = 200
    scale_max: float = 0
    ticks: list[tuple[float, str]] = field(default_factory=list)

    @property
    def height(self) -> int:
        return self.row * len(self.bars) + 30


def capacity_bars(rows: Sequence[tuple[str, float, float]]) -> BarChart:
    """Allocated and free devices per hardware, on one shared scale so bars compare."""
    chart = BarChart(bars=[])
    span = chart.width - chart.label_width - 20
    top = nice_ceiling(max((a + f for _, a, f in rows), default=0))
    chart.scale_max = top
    for label, allocated, free in rows:
        chart.bars.append(Bar(label, allocated, free, allocated / top * span, free / top * span))
    chart.ticks = [(chart.label_width + i / 4 * span, number(top * i / 4, 0 if top >= 4 else 1)) for i in range(5)]
    return chart


@dataclass
class Segment:
    name: str
    css: str
    value: float
    x: float
    width: float


@dataclass
class StackRow:
    label: str
    segments: list[Segment]
    total: float


@dataclass
class StackChart:
    rows: list[StackRow]
    unit: str
    width: int = WIDTH
    row: int = 28
    label_width: int = 200
    ticks: list[tuple[float, str]] = field(default_factory=list)

    @property
    def height(self) -> int:
        return self.row * len(self.rows) + 30


def stacked_bars(rows: Sequence[tuple[str, Sequence[tuple[str, float]]]], unit: str) -> StackChart:
    """One bar per row, its named parts side by side on one shared scale (a device's memory, split by use)."""
    chart = StackChart(rows=[], unit=unit)
    span = chart.width - chart.label_width - 20
    top = nice_ceiling(max((sum(max(v, 0) for _, v in parts) for _, parts in rows), default=0))
    for label, parts in rows:
        x, segments = float(chart.label_width), []
        for index, (name, value) in enumerate(parts):
            width = max(value, 0) / top * span
            segments.append(Segment(name, f"p{index}", value, x, width))
            x += width
        chart.rows.append(StackRow(label, segments, sum(max(v, 0) for _, v in parts)))
    chart.ticks = [(chart.label_width + i / 4 * span, number(top * i / 4, 0 if top >= 4 else 1)) for i in range(5)]
    return chart


@dataclass
class Sparkline:
    """A card's small line: one series over the range, no axes; its first, lowest, highest and latest values named."""

    points: str
    unit: str
    latest: str
    low: str
    high: str
    count: int
    width: int = 120
    height: int = 32


def sparkline(values: Sequence[tuple[float, float]], unit: str, start: float, end: float,
              *, width: int = 120, height: int = 32) -> Sparkline | None:
    """``values`` (in the common unit) as polyline points over ``start``..``end``; None when there are none."""
    if not values:
        return None
    shown = [scaled(v, unit) for _, v in values]
    top = 100.0 if unit == "ratio" else nice_ceiling(max(shown))
    span = max(end - start, 1.0)
    pad = 2
    points = " ".join(f"{pad + (t - start) / span * (width - 2 * pad):.1f},"
                      f"{height - pad - min(max(s / top, 0.0), 1.0) * (height - 2 * pad):.1f}"
                      for (t, _), s in zip(values, shown))
    return Sparkline(points, display_unit(unit), quantity(values[-1][1], unit), quantity(min(v for _, v in values), unit),
                     quantity(max(v for _, v in values), unit), len(values), width, height)


def mean_series(series: Sequence[Sequence[tuple[float, float]]]) -> list[tuple[float, float]]:
    """The mean over the series at every instant any of them has a value (each series counted where it has one)."""
    sums: dict[float, list[float]] = {}
    for points in series:
        for t, v in points:
            if v is not None and math.isfinite(v):
                sums.setdefault(t, []).append(v)
    return [(t, sum(vs) / len(vs)) for t, vs in sorted(sums.items())]
