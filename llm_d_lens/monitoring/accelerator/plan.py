"""What to read for one hardware profile, independent of how it is read.

A :class:`DevicePlan` is the profile's ``telemetry`` block turned into common quantities with fixed
names and units, exact conversion factors, and the exporter labels behind each common label. Both
readers use it: :mod:`.promql` renders it as PromQL for Prometheus, :mod:`.snapshot` evaluates it
over a parsed exposition page. Neither knows which vendor a plan came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from fractions import Fraction

from llm_d_lens.hardware.models import FallbackSource, HardwareProfile, MetricSource
from llm_d_lens.hardware.quantities import QUANTITY_UNITS

#: Source unit -> factor to the quantity's common unit. MB is read as MiB: the exporters that
#: report "MB" compute it as bytes / 2^20.
UNIT_FACTORS: dict[str, Fraction] = {
    "percent": Fraction(1, 100), "ratio": Fraction(1),
    "bytes": Fraction(1), "MiB": Fraction(2**20), "MB": Fraction(2**20), "GiB": Fraction(2**30),
    "mW": Fraction(1, 1000), "W": Fraction(1),
    "uJ": Fraction(1, 10**6), "mJ": Fraction(1, 1000), "J": Fraction(1),
    "celsius": Fraction(1),
    "count": Fraction(1), "code": Fraction(1), "B/s": Fraction(1), "flag": Fraction(1),
    "MHz": Fraction(10**6), "Hz": Fraction(1), "bitmask": Fraction(1),
}


@dataclass(frozen=True)
class Quantity:
    key: str  # the profile's device_metric_sources key
    field: str  # the reading's field name, carrying the unit
    unit: str
    title: str


QUANTITIES: tuple[Quantity, ...] = tuple(
    Quantity(key, f"{key}_{suffix}", QUANTITY_UNITS[key], title)
    for key, suffix, title in (
        ("utilization", "ratio", "util"),
        ("memory_used", "bytes", "mem used"),
        ("memory_total", "bytes", "mem total"),
        ("power", "watts", "power"),
        ("energy", "joules", "energy"),
        ("temperature", "celsius", "temp"),
        ("tensor_activity", "ratio", "tensor"),
        ("memory_temperature", "celsius", "mem temp"),
        ("memory_bandwidth", "ratio", "mem bw"),
        ("ecc_corrected", "errors", "ecc corrected"),
        ("ecc_uncorrected", "errors", "ecc uncorrected"),
        ("pcie_replays", "count", "pcie replays"),
        ("critical_event", "code", "critical event"),
        ("pcie_throughput", "bytes_per_second", "pcie"),
        ("link_throughput", "bytes_per_second", "link"),
        ("link_errors", "count", "link errors"),
        ("row_remap_failure", "flag", "row remap failed"),
        ("remapped_rows_correctable", "count", "remapped rows (corr)"),
        ("remapped_rows_uncorrectable", "count", "remapped rows (uncorr)"),
        ("link_traffic", "count", "link traffic"),
        ("device_healthy", "flag", "healthy"),
        ("links_up", "flag", "links up"),
        ("core_clock", "hertz", "core clock"),
        ("memory_clock", "hertz", "mem clock"),
        ("power_limit", "watts", "power limit"),
        ("throttle_reasons", "bitmask", "throttle reasons"),
        ("power_throttle", "ratio", "power throttle"),
        ("thermal_throttle", "ratio", "thermal throttle"),
        ("link_data", "bytes", "link data"),
        ("pcie_traffic", "bytes", "pcie traffic"),
        ("pending_rows_correctable", "count", "pending rows (corr)"),
        ("pending_rows_uncorrectable", "count", "pending rows (uncorr)"),
    )
)
#: The health quantities that flag a device: (quantity, what a problem means, the value that is a problem).
#: ``nonzero``: any value above 0 (errors, a failure flag, an event code); ``zero``: a flag that is 1 when
#: all is well (the exporter's own health verdict, every link up) and 0 when not.
HEALTH_FLAGS: tuple[tuple[str, str, str], ...] = (
    ("ecc_uncorrected", "uncorrected memory errors", "nonzero"),
    ("critical_event", "last critical event code", "nonzero"),
    ("row_remap_failure", "memory row remapping failed", "nonzero"),
    ("device_healthy", "the exporter reports the device unhealthy", "zero"),
    ("links_up", "a link is down", "zero"),
)
#: Health quantities that make health known without flagging a device by themselves: a count that rises
#: in normal service (rows remapped and so repaired, a traffic counter), shown beside the flags.
HEALTH_SIGNALS: tuple[str, ...] = (
    "ecc_corrected", "pcie_replays", "link_errors",
    "remapped_rows_correctable", "remapped_rows_uncorrectable", "link_traffic",
    "pending_rows_correctable", "pending_rows_uncorrectable",
)
QUANTITY_BY_KEY = {q.key: q for q in QUANTITIES}

#: Common labels, in the order readings show them. ``sub`` is the tile or partition.
COMMON_LABELS = ("node", "device", "sub", "uuid", "pci_bus_id", "serial", "model", "pod", "namespace", "container", "source")
#: The labels every quantity row keeps: one physical device (or one tile, when tiles are not folded).
KEY_LABELS = ("node", "device", "sub")
#: Prefix of the labels Lens writes in PromQL, so they never collide with an exporter's own.
PREFIX = "lens_"
#: Whose series name the devices and their pods: the first declared of these quantities. Memory is
#: reported by every tile and partition, where activity or power may come from the first one only.
IDENTITY_ORDER = ("memory_used", "memory_total", "utilization", "power", "energy", "temperature", "tensor_activity")


def lens_label(common: str) -> str:
    return PREFIX + common


#: The label a refresh row carries when a fallback source answered it: the fallback's number (1 = first).
FALLBACK_LABEL = lens_label("fallback")


@dataclass(frozen=True)
class SourcePlan:
    """One place a quantity is read from: the quantity's own source or one of its fallbacks."""

    metrics: tuple[str, ...]
    matchers: tuple[str, ...]
    combine: str  # first | sum | divide
    factor: Fraction  # unit conversion times the scale
    aggregation: str
    note: str | None = None

    def describe(self) -> str:
        joiner = {"sum": " + ", "divide": " / "}.get(self.combine, " or ")
        return joiner.join(self.metrics)


@dataclass(frozen=True)
class QuantityPlan:
    quantity: Quantity
    metrics: tuple[str, ...]
    matchers: tuple[str, ...]
    combine: str  # first | sum | divide
    factor: Fraction  # unit conversion times the profile's scale
    aggregation: str  # collapses duplicate series of one device (or tile)
    fold: str  # tile_aggregation
    fallbacks: tuple[SourcePlan, ...] = ()  # tried per device (or tile) where the sources before have no series

    @property
    def primary(self) -> SourcePlan:
        return SourcePlan(self.metrics, self.matchers, self.combine, self.factor, self.aggregation)

    @property
    def sources(self) -> tuple[SourcePlan, ...]:
        """The quantity's own source, then its fallbacks, in the order they are tried."""
        return (self.primary, *self.fallbacks)


@dataclass(frozen=True)
class SentinelPlan:
    """One row of the exporter's sentinel table (a profile's ``telemetry.sentinels``)."""

    metrics: frozenset[str]
    at_least: float | None
    values: tuple[float, ...]
    reason: str

    def matches(self, value: float) -> bool:
        return (self.at_least is not None and value >= self.at_least) or value in self.values


@dataclass(frozen=True)
class DevicePlan:
    hardware: str
    labels: dict[str, tuple[str, ...]]  # common label -> exporter labels, first present wins
    quantities: tuple[QuantityPlan, ...]
    sentinels: tuple[SentinelPlan, ...] = ()

    @cached_property
    def _sentinels_by_metric(self) -> dict[str, tuple[SentinelPlan, ...]]:
        metrics = {m: None for s in self.sentinels for m in sorted(s.metrics)}
        return {m: tuple(s for s in self.sentinels if m in s.metrics) for m in metrics}

    def sentinel_rules(self, metric: str) -> tuple[SentinelPlan, ...]:
        """The sentinel rows that apply to ``metric``, in the profile's order (asked once per row of a refresh)."""
        return self._sentinels_by_metric.get(metric, ())

    def sentinel_reason(self, metric: str, value: float) -> str | None:
        """Why ``value`` of ``metric`` is no reading, or None when it is one."""
        if self.is_reading(metric, value):  # below every at_least, equal to no exact value: no row matches
            return None
        return next((s.reason for s in self.sentinel_rules(metric) if s.matches(value)), None)

    @cached_property
    def _reading_tests(self) -> dict[str, tuple[float | None, frozenset[float]]]:
        """Per metric with sentinels: the lowest ``at_least`` of its rows (None: none has one) and every exact value."""
        tests = {}
        for metric, rules in self._sentinels_by_metric.items():
            floors = [r.at_least for r in rules if r.at_least is not None]
            tests[metric] = (min(floors) if floors else None, frozenset(v for r in rules for v in r.values))
        return tests

    def is_reading(self, metric: str, value: float) -> bool:
        """Whether ``value`` passes the PromQL filters of :func:`.queries.without_sentinels`, comparison by comparison:
        ``< at_least`` (which no NaN passes) and ``!= value`` for each exact sentinel: below the lowest ``at_least``,
        and in no set of the exact values (a NaN is in none, as it equals none; -0.0 is where 0.0 is, as it equals it)."""
        tests = self._reading_tests.get(metric)
        if tests is None:
            return True
        below, exact = tests
        return (below is None or value < below) and value not in exact

    def reading_test(self, metric: str) -> tuple[float | None, frozenset[float]] | None:
        """:meth:`is_reading`'s test of ``metric`` for a comprehension over many values (a refresh asks it of every row
        of the largest answers Lens reads): the lowest ``at_least`` (None: none) and the exact sentinel values; None
        when no sentinel applies (every value is a reading)."""
        return self._reading_tests.get(metric)

    def sentinel_selections(self) -> list[tuple[str, tuple[str, ...], str]]:
        """Every (metric, matchers, aggregation) the plan reads that a sentinel applies to, once each, in order."""
        seen: dict[tuple[str, tuple[str, ...], str], None] = {}
        for q in self.quantities:
            for source in q.sources:
                for metric in source.metrics:
                    if self.sentinel_rules(metric):
                        seen[(metric, source.matchers, source.aggregation)] = None
        return list(seen)

    @property
    def folded(self) -> bool:
        """Whether tiles fold into their device (the rules make every source agree)."""
        return any(q.fold != "none" for q in self.quantities)

    def raw_labels(self, commons: tuple[str, ...] | list[str]) -> tuple[str, ...]:
        """The exporter labels behind ``commons``, every spelling once, in order."""
        return tuple(dict.fromkeys(name for common in commons for name in self.labels.get(common, ())))

    def identity_selector(self) -> tuple[str, tuple[str, ...]]:
        """(metric, matchers) whose series list every device and tile with its ids and pod labels."""
        return self.identity_selectors()[0]

    def identity_selectors(self) -> list[tuple[str, tuple[str, ...]]]:
        """The identity quantity's first metric of each of its sources: every exporter generation's devices."""
        by_key = {q.quantity.key: q for q in self.quantities}
        quantity = next((by_key[k] for k in IDENTITY_ORDER if k in by_key), self.quantities[0])
        return list(dict.fromkeys((s.metrics[0], s.matchers) for s in quantity.sources))

    def metric_selectors(self) -> list[tuple[str, tuple[str, ...]]]:
        """Every (metric, matchers) the plan reads, fallbacks included, once each, in declaration order."""
        seen: dict[tuple[str, tuple[str, ...]], None] = {}
        for q in self.quantities:
            for source in q.sources:
                for metric in source.metrics:
                    seen[(metric, source.matchers)] = None
        return list(seen)


def _names(value: str | list[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def plan_for(profile: HardwareProfile) -> DevicePlan | None:
    """The plan of a profile's ``device_metric_sources``, or None when it declares none."""
    telemetry = profile.telemetry
    if telemetry is None or not telemetry.device_metric_sources:
        return None
    schema = telemetry.label_schema
    labels = {
        "node": _names(schema.node),
        "device": _names(schema.device),
        "sub": _names(schema.tile) + _names(schema.partition),
        "uuid": _names(schema.uuid),
        "pci_bus_id": _names(schema.pci_bus_id),
        "serial": _names(schema.serial),
        "model": _names(schema.model),
        "pod": _names(schema.pod),
        "namespace": _names(schema.namespace),
        "container": _names(schema.container),
        "source": _names(telemetry.source_label),
    }
    sources = telemetry.device_metric_sources
    quantities = tuple(_quantity_plan(q, sources[q.key]) for q in QUANTITIES if q.key in sources)  # type: ignore[index]
    sentinels = tuple(SentinelPlan(frozenset(s.metrics), s.at_least, tuple(s.values), s.reason) for s in telemetry.sentinels)
    return DevicePlan(profile.id, {k: v for k, v in labels.items() if v}, quantities, sentinels)


def _factor(source: MetricSource | FallbackSource) -> Fraction:
    return UNIT_FACTORS[source.unit] * Fraction(str(source.scale))


def _quantity_plan(quantity: Quantity, source: MetricSource) -> QuantityPlan:
    fallbacks = tuple(
        SourcePlan(tuple(f.metrics), tuple(f.matchers), f.combine, _factor(f), f.aggregation, f.note) for f in source.fallbacks
    )
    return QuantityPlan(
        quantity=quantity,
        metrics=tuple(source.metrics),
        matchers=tuple(source.matchers),
        combine=source.combine,
        factor=_factor(source),
        aggregation=source.aggregation,
        fold=source.tile_aggregation,
        fallbacks=fallbacks,
    )


#: The label a sentinel row carries: the metric whose sample was a sentinel.
SENTINEL_LABEL = lens_label("sentinel")


def apply_factor(value: float, factor: Fraction) -> float:
    """``value`` converted exactly as the PromQL rendering does it (multiply, then divide)."""
    if factor.numerator != 1:
        value = value * factor.numerator
    if factor.denominator != 1:
        value = value / factor.denominator
    return value
