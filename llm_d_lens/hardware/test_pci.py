"""PCI addresses: every spelling exporters, drivers and users write comes to one."""

from __future__ import annotations

import pytest

from llm_d_lens.hardware.pci import normalise_pci


@pytest.mark.parametrize(
    "text, expected",
    [("00000000:18:00.0", "0000:18:00.0"), ("0000:3A:00.0", "0000:3a:00.0"), ("0000-29-00-0", "0000:29:00.0"),
     ("18:00.0", "0000:18:00.0"), ("card0", None), ("0000:18:00.9", None),
     (" 0001:af:1f.7 ", "0001:af:1f.7"), ("3b:00", None), ("0000:3b:00.0.1", None)],
)
def test_pci_addresses_are_compared_in_one_spelling(text, expected):
    assert normalise_pci(text) == expected
