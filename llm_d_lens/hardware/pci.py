"""PCI addresses in the one spelling Lens compares: ``dddd:bb:dd.f``, lower case.

Exporters, drivers and users write the same device several ways: ``00000000:18:00.0`` (an 8-digit
domain), ``0000:3A:00.0``, ``0000-29-00-0``, or ``18:00.0`` without a domain. DRA device attributes
(``pciBusID``-style) hold the canonical form, so everything is brought to it before comparing.
"""

from __future__ import annotations

import re

_PCI = re.compile(r"^(?:([0-9a-fA-F]{1,8})[:\-])?([0-9a-fA-F]{1,2})[:\-]([0-9a-fA-F]{1,2})[.\-]([0-7])$")


def normalise_pci(text: str) -> str | None:
    """``text`` as ``dddd:bb:dd.f``, or None when it is not a PCI address."""
    found = _PCI.match(text.strip())
    if not found:
        return None
    domain, bus, device, function = found.groups()
    return f"{int(domain or '0', 16):04x}:{int(bus, 16):02x}:{int(device, 16):02x}.{function}"
