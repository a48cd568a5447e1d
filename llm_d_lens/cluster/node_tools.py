"""Parsers for node discovery tools' output, driven by a profile's ``planning.discovery``.

A profile declares the command (a vendor's ``*-smi``), the parser (``json``, ``csv`` or ``text``)
and ``fields``: the tool's field name -> the fact it carries. The facts are the same for every
vendor: ``product``, ``memory_bytes`` / ``memory_mib`` / ``memory_gib``, ``pci_bus_id``, ``uuid``,
``serial`` and ``partition``. No parser knows a vendor; a new tool needs only a profile entry.

- ``csv``: one device a line. With a header line (its cells are the field names, optionally with a
  unit: ``memory.total [MiB]``) columns are found by name; without one (``noheader``) they are the
  declared fields, in the order the profile lists them.
- ``json``: a list of device objects, or an object holding one (``{"device_list": [...]}``); field
  names are dotted paths (``asic.market_name``). A value may be a number, a string with a unit
  (``"196592 MB"``) or ``{"value": 196592, "unit": "MB"}``.
- ``text``: ``name: value`` lines, a blank line (or a repeated name) starting the next device.

Tools print ``N/A`` or ``[Not Supported]`` for what they cannot read: that fact stays unknown, it
never becomes zero. Numbers may carry thousands separators of other locales (``81 559``,
``81.559``, ``81'559``) and a decimal comma.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from llm_d_lens.cluster.errors import DiscoveryOutputInvalid
from llm_d_lens.hardware.pci import normalise_pci

FACTS = ("product", "memory_bytes", "memory_mib", "memory_gib", "pci_bus_id", "uuid", "serial", "partition")
#: what one unit is in bytes; "MB" and "GB" as device tools print them mean MiB and GiB
UNITS = {"b": 1, "bytes": 1, "kb": 1024, "kib": 1024, "mb": 2**20, "mib": 2**20, "gb": 2**30, "gib": 2**30,
         "tb": 2**40, "tib": 2**40}
UNKNOWN = {"", "n/a", "na", "[n/a]", "[not supported]", "not supported", "unknown", "none", "null", "-", "[unknown error]"}
#: the most a device can hold: 1 PiB; beyond it the tool's output is misread
MAX_DEVICE_BYTES = 2**50
MAX_OUTPUT_CHARS = 4 * 1024 * 1024
_NUMBER = re.compile(r"^\s*([+-]?[0-9][0-9 \u00a0\u202f'.,]*)\s*([A-Za-z]*)\s*$")


@dataclass(frozen=True)
class DiscoveredDevice:
    product: str | None = None
    memory_bytes: int | None = None
    pci_bus_id: str | None = None
    uuid: str | None = None
    serial: str | None = None
    partition: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"product": self.product, "memory_bytes": self.memory_bytes, "pci_bus_id": self.pci_bus_id,
                "uuid": self.uuid, "serial": self.serial, "partition": self.partition}


def parse(output: str, parser: str, fields: Mapping[str, str], source: str) -> list[DiscoveredDevice]:
    """The devices a tool's ``output`` lists, read with the profile's ``parser`` and ``fields``."""
    bad = {fact for fact in fields.values() if fact not in FACTS}
    if bad:
        raise DiscoveryOutputInvalid(source, "fields", f"unknown facts {sorted(bad)}; known: {', '.join(FACTS)}")
    if len(output) > MAX_OUTPUT_CHARS:
        raise DiscoveryOutputInvalid(source, "output", f"is longer than {MAX_OUTPUT_CHARS} characters")
    text = output.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    readers = {"csv": _csv_records, "json": _json_records, "text": _text_records}
    if parser not in readers:
        raise DiscoveryOutputInvalid(source, "parser", f"{parser!r} is not one of {', '.join(readers)}")
    records = readers[parser](text, fields, source)
    return [_device(record, fields, source, f"device {i}") for i, record in enumerate(records)]


# -- record readers: each yields {tool field name: raw value} ---------------------------------------


def _csv_records(text: str, fields: Mapping[str, str], source: str) -> list[dict[str, Any]]:
    reader = csv.reader(io.StringIO(text), skipinitialspace=True)
    rows = [(reader.line_num, row) for row in reader if any(cell.strip() for cell in row)]
    if not rows:
        return []
    names = list(fields)
    header = [re.sub(r"\s*\[[^\]]*\]\s*$", "", cell.strip()) for cell in rows[0][1]]
    columns, body = (header, rows[1:]) if set(names) <= set(header) else (names, rows)
    records = []
    for number, row in body:
        if len(row) != len(columns):
            shown = ", ".join(row)[:120]
            raise DiscoveryOutputInvalid(source, f"line {number}",
                                         f"has {len(row)} columns, {len(columns)} expected ({', '.join(columns)}): {shown!r}")
        records.append({name: cell.strip() for name, cell in zip(columns, row)})
    return records


def _json_records(text: str, fields: Mapping[str, str], source: str) -> list[dict[str, Any]]:
    try:
        document = json.loads(text, parse_constant=lambda value: None)
    except (ValueError, RecursionError) as exc:
        first = text.strip().splitlines()[0][:120] if text.strip() else "(empty)"
        raise DiscoveryOutputInvalid(source, "output", f"is not JSON ({exc}); it begins {first!r}") from None
    items = document
    if isinstance(document, Mapping):
        lists = [value for value in document.values() if isinstance(value, list)]
        items = lists[0] if lists else [document]
    if not isinstance(items, list):
        raise DiscoveryOutputInvalid(source, "$", "holds no list of devices")
    records = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise DiscoveryOutputInvalid(source, f"$[{i}]", f"is not an object: {str(item)[:60]!r}")
        records.append({name: _dotted(item, name) for name in fields})
    return records


def _dotted(item: Mapping[str, Any], path: str) -> Any:
    value: Any = item
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _text_records(text: str, fields: Mapping[str, str], source: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    for line in text.split("\n"):
        if not line.strip():
            if current:
                records.append(current)
                current = {}
            continue
        name, colon, value = line.partition(":")
        name = name.strip()
        if not colon or name not in fields:
            continue
        if name in current:
            records.append(current)
            current = {}
        current[name] = value.strip()
    if current:
        records.append(current)
    return records


# -- values -----------------------------------------------------------------------------------------


def _device(record: Mapping[str, Any], fields: Mapping[str, str], source: str, where: str) -> DiscoveredDevice:
    facts: dict[str, Any] = {}
    for name, fact in fields.items():
        value = record.get(name)
        if fact.startswith("memory_"):
            memory = _memory(value, fact, source, f"{where}: {name}")
            if memory is not None:
                facts["memory_bytes"] = memory
        else:
            text = _text(value)
            if text is not None and fact == "pci_bus_id":
                text = normalise_pci(text) or text
            facts[fact] = text
    return DiscoveredDevice(**facts)


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).strip()
    return None if text.lower() in UNKNOWN else text


def _memory(value: Any, fact: str, source: str, where: str) -> int | None:
    """Bytes from a number in the fact's unit, a "196592 MB" string, or a {"value", "unit"} object."""
    unit = {"memory_bytes": "bytes", "memory_mib": "mib", "memory_gib": "gib"}[fact]
    if isinstance(value, Mapping):
        unit = str(value.get("unit") or unit)
        value = value.get("value")
    if isinstance(value, bool):
        raise DiscoveryOutputInvalid(source, where, f"{value!r} is not an amount of memory")
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        text = _text(value)
        if text is None:
            return None
        number, printed_unit = _number(text, source, where)
        unit = printed_unit or unit
    factor = UNITS.get(unit.strip().lower())
    if factor is None:
        raise DiscoveryOutputInvalid(source, where, f"unit {unit!r} is not a memory unit")
    amount = number * factor
    if not math.isfinite(amount) or amount < 0 or amount > MAX_DEVICE_BYTES:
        raise DiscoveryOutputInvalid(source, where, f"{value!r} is not a device's memory (0 to 1 PiB)")
    return int(amount) or None


def _number(text: str, source: str, where: str) -> tuple[float, str]:
    """A number as tools in any locale print it, and the unit after it (may be empty).

    Spaces, no-break spaces and apostrophes group thousands; with both ``.`` and ``,`` the later is
    the decimal mark; a lone mark followed by exactly three digits groups (``81.559``, ``81,559``),
    any other lone mark is decimal (``95,5``, ``1.5``).
    """
    found = _NUMBER.match(text)
    if not found:
        raise DiscoveryOutputInvalid(source, where, f"{text!r} is not a number")
    digits, unit = found.groups()
    digits = re.sub(r"[ \u00a0\u202f']", "", digits)
    if "," in digits and "." in digits:
        decimal = "," if digits.rfind(",") > digits.rfind(".") else "."
        grouping = "." if decimal == "," else ","
        digits = digits.replace(grouping, "").replace(decimal, ".")
    else:
        for mark in (",", "."):
            parts = digits.split(mark)
            if len(parts) > 2 or (len(parts) == 2 and len(parts[1]) == 3 and 1 <= len(parts[0].lstrip("+-")) <= 3):
                digits = digits.replace(mark, "")
            elif len(parts) == 2:
                digits = digits.replace(mark, ".")
    try:
        return float(digits), unit
    except ValueError:
        raise DiscoveryOutputInvalid(source, where, f"{text!r} is not a number") from None
