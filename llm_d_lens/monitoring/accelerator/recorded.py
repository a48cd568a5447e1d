"""A refresh that reads what Lens' recording rules recorded: one selector, no client-side matching.

Where the rules of :mod:`.rules` run (a PrometheusRule, or ``lens telemetry rules`` in
``rule_files``), everything a refresh needs is already stored per device under ``lens:accelerator_*``:
each quantity in its common unit, folded and on ``lens_*`` labels; which fallback answered it; the
sentinel rows; the inventory with the exporter's identity and pod labels; the pods of the scrape
targets. So the refresh first sends one plain selector of those series for every selected hardware
(:func:`recorded_query`). A hardware is read from it when its inventory record is there and carries
the digest of the rules this Lens generates (:func:`.rules.rules_digest`); any other hardware (no
rules, rules of another version, no devices) is read from the exporters' series as before, in the
same refresh. The probe is the read: with the rules, one round trip in all; without, one cheap
selector more.

The rows are taken apart here into what :func:`.readings.assemble` takes from a raw refresh: the
inventory, sentinel and target rows as samples of the labels their hardware's rows carry, each
device's quantities as one field -> value mapping, and per quantity the fallback that answered each
device, keyed as :func:`.fold.per_device` keys them, so every number is the recorded series' own.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import msgspec

from llm_d_lens.monitoring.accelerator.fold import Key
from llm_d_lens.monitoring.accelerator.plan import SENTINEL_LABEL, DevicePlan, lens_label
from llm_d_lens.monitoring.accelerator.queries import TARGETS_LABELS, TILE_KEY, inventory_labels
from llm_d_lens.monitoring.accelerator.rules import (
    DIGEST_LABEL, FALLBACK_RECORD, HARDWARE_LABEL, INVENTORY_RECORD, QUANTITY_LABEL, SENTINEL_RECORD,
    TARGET_RECORD, recorded_name, rules_digest,
)
from llm_d_lens.prometheus.answers import Row, attributes_reader, present_labels, row_numbers, tagged_label_structs
from llm_d_lens.prometheus.client import PrometheusClient, Sample
from llm_d_lens.prometheus.promql import matcher, regex_literal

NAME = "__name__"
_NODE, _DEVICE, _SUB = lens_label("node"), lens_label("device"), lens_label("sub")
#: the records kept as rows, and under which name of :attr:`Recorded.rows` (targets: :attr:`Recorded.targets`)
_ROWS = {INVENTORY_RECORD: "inventory", SENTINEL_RECORD: "sentinels", TARGET_RECORD: "targets"}


def record_names(plans: Sequence[DevicePlan]) -> tuple[str, ...]:
    """Every series name the rules of ``plans`` record: each quantity's, then the inventory, fallback, sentinel and
    scrape-target records."""
    quantities = (recorded_name(q) for p in plans for q in p.quantities)
    return tuple(dict.fromkeys((*quantities, *_ROWS, FALLBACK_RECORD)))


def recorded_query(plans: Sequence[DevicePlan]) -> str:
    """One selector of every series this Lens' rules record for the hardware ``plans`` read, by name (so a record
    only other rules make, of another Lens version, is not read: those rules' inventory is, and tells them apart)."""
    names = matcher(NAME, "=~", "|".join(regex_literal(n) for n in record_names(plans)))
    hardware = matcher(HARDWARE_LABEL, "=~", "|".join(regex_literal(p.hardware) for p in plans))
    return f"{{{names}, {hardware}}}"


@dataclass
class Recorded:
    """One hardware's recorded rows, as a refresh's assembly takes them."""

    rows: dict[str, list[Sample]] = field(default_factory=dict)  # inventory, sentinels
    targets: list[Sample] = field(default_factory=list)
    # per device (or tile): quantity field -> value (a device's first value makes its mapping)
    values: defaultdict[Key, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))
    fallbacks: dict[str, dict[Key, int]] = field(default_factory=dict)  # quantity key -> fallback number per device
    digests: set[str] = field(default_factory=set)


def recorded_fields(plans: Sequence[DevicePlan]) -> tuple[tuple[str, str], ...]:
    """(attribute, label) of every label Lens' recorded series of ``plans`` carry, sorted by label: the name, the
    hardware, the digest, the quantity of a fallback record, the ``lens_*`` device key, the sentinel's metric, the
    inventory's exporter labels and the sentinel rows' tile labels, the scrape targets' labels."""
    special = {NAME: "name", HARDWARE_LABEL: "hardware", DIGEST_LABEL: "digest", QUANTITY_LABEL: "quantity",
               _NODE: "node", _DEVICE: "device", _SUB: "sub"}
    labels = sorted({*special, SENTINEL_LABEL, *TARGETS_LABELS,
                     *(label for p in plans for label in (*inventory_labels(p), *p.raw_labels(TILE_KEY)))})
    return tuple((special.get(label) or f"o{i}", label) for i, label in enumerate(labels))


def _reader(fields: tuple[tuple[str, str], ...], wanted: set[str]) -> tuple[tuple[str, ...], Callable[[Any], tuple[str, ...]]]:
    """The labels of ``fields`` in ``wanted`` (in ``fields``' order), and what reads their values off a row's labels."""
    chosen = [(attribute, label) for attribute, label in fields if label in wanted]
    return tuple(label for _, label in chosen), attributes_reader([attribute for attribute, _ in chosen])


def record_structs(plans: Sequence[DevicePlan]) -> dict[str, type[msgspec.Struct]]:
    """Per record name (:func:`record_names`), the Struct its series' labels are decoded into (the name is the tag,
    :func:`.answers.tagged_label_structs`): a quantity's holds the hardware and the ``lens_*`` device key, the rows kept
    as rows (inventory, fallback, sentinel, targets) every label of :func:`recorded_fields`; any other label is
    skipped, and the hardware is one of ``plans``' (a literal, as the selector asks for no other)."""
    rows = tuple((attribute, label) for attribute, label in recorded_fields(plans) if attribute != "name")
    quantity = tuple((attribute, label) for attribute, label in rows if attribute in ("hardware", "node", "device", "sub"))
    kinds = tuple((name, rows if name in _ROWS or name == FALLBACK_RECORD else quantity) for name in record_names(plans))
    return tagged_label_structs(NAME, kinds, closed=False, choices=(("hardware", tuple(p.hardware for p in plans)),))


def recorded_labels(plans: Sequence[DevicePlan]) -> Any:
    """What a recorded row's labels are decoded into: the union of :func:`record_structs`."""
    return Union[tuple(record_structs(plans).values())]  # noqa: UP007 - a union made at run time


def split_recorded(plans: Sequence[DevicePlan], rows: Sequence[Row[Any]]) -> dict[str, Recorded]:
    """Each hardware's rows of a :func:`recorded_query` answer (labels decoded into :func:`recorded_labels`' union);
    a series no plan reads is left out. ``ValueError``: a value that is no number.

    A quantity's or a fallback's row gives only its key and value, gathered per device (so assembly sets each
    device's values at once); only the rows kept as rows (inventory, sentinels, targets) become samples, their
    labels without the recording's. Every value is read at once (:func:`.answers.row_numbers`), so a quantity's
    row (nearly all of them) costs two lookups, its hardware's records and its name's, and one store.
    """
    fields = tuple((attribute, label) for attribute, label in recorded_fields(plans) if attribute != "name")
    structs = record_structs(plans)
    by_hardware = {p.hardware: Recorded() for p in plans}
    # per hardware, each quantity's record (its Struct) -> (its reading field, whether it keeps tiles, the hardware's devices)
    slots = {p.hardware: {structs[recorded_name(q)]: (q.quantity.field, q.fold == "none", by_hardware[p.hardware].values)
                          for q in p.quantities} for p in plans}
    tiled = {(p.hardware, q.quantity.key): q.fold == "none" for p in plans for q in p.quantities}
    kinds = {structs[name]: name for name in (*_ROWS, FALLBACK_RECORD)}
    # per hardware, the labels its kept rows can carry (beside the recording's): read only those
    kept = {p.hardware: _reader(fields, {*inventory_labels(p), *p.raw_labels(TILE_KEY), SENTINEL_LABEL, *TARGETS_LABELS})
            for p in plans}

    def labels(metric: Any) -> dict[str, str]:
        names, read = kept[metric.hardware]
        return present_labels(names, read(metric))

    for row, value in zip(rows, row_numbers(rows)):
        metric = row.metric
        records = slots.get(metric.hardware)
        if records is None:
            continue
        slot = records.get(type(metric))
        if slot is not None:
            field_, tiles, devices = slot
            devices[(metric.node, metric.device, metric.sub if tiles else "")][field_] = value
            continue
        name = kinds.get(type(metric))
        found = by_hardware[metric.hardware]
        if name == FALLBACK_RECORD:
            quantity = metric.quantity
            if (metric.hardware, quantity) in tiled:
                key = (metric.node, metric.device, metric.sub if tiled[(metric.hardware, quantity)] else "")
                found.fallbacks.setdefault(quantity, {})[key] = int(value)
        elif name is not None:
            if name == INVENTORY_RECORD:
                found.digests.add(metric.digest)
            sample = Sample(labels(metric), value)
            if name == TARGET_RECORD:
                found.targets.append(sample)
            else:
                found.rows.setdefault(_ROWS[name], []).append(sample)
    return by_hardware


def usable(plan: DevicePlan, recorded: Recorded, digest: str | None = None) -> bool:
    """Whether the hardware's recorded series come from the rules this Lens generates for ``plan`` (``digest``, their
    :func:`.rules.rules_digest` when known), and list devices."""
    return recorded.digests == {digest or rules_digest(plan)}


async def read_recorded(client: PrometheusClient, plans: Sequence[DevicePlan],
                        at: float | None = None) -> tuple[dict[str, Recorded], list[str]]:
    """The recorded rows of every hardware in ``plans`` that has usable ones (:func:`usable`), in one round trip,
    and a warning per hardware whose recorded series other rules made."""
    if not plans:
        return {}, []
    promql = recorded_query(plans)
    rows = await client.query_rows(promql, recorded_labels(plans), at)
    try:
        found = split_recorded(plans, rows)
    except ValueError as exc:
        raise client.answered_invalid(f"a malformed vector ({exc})", promql) from None
    expected = {p.hardware: rules_digest(p) for p in plans}
    read = {p.hardware: found[p.hardware] for p in plans if usable(p, found[p.hardware], expected[p.hardware])}
    warnings = [f"{p.hardware}: the series recorded as {INVENTORY_RECORD} come from other rules than this Lens generates "
                f"({DIGEST_LABEL} {', '.join(sorted(d or '(none)' for d in found[p.hardware].digests))}, expected "
                f"{expected[p.hardware]}); read from the exporters' series instead (lens telemetry rules regenerates them)"
                for p in plans if found[p.hardware].digests and p.hardware not in read]
    return read, warnings
