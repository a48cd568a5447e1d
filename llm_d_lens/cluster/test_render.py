"""`lens cluster inspect` tables read well at 80 and 120 columns; `-o wide` shows every column."""

from __future__ import annotations

import pytest

from llm_d_lens.cluster.render import overview_renderable
from llm_d_lens.cluster.service import inspect
from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.testing.tables import (
    assert_readable,
    assert_right_aligned,
    body_rows,
    header_cells,
    render,
)

DEFAULT = ["HARDWARE", "NODES", "DEVICES", "TOTAL", "IN USE", "FREE", "VRAM (GiB)"]
NODES = ["NODE", "STATUS", "HARDWARE", "IN USE", "FREE", "VRAM (GiB)"]


@pytest.fixture(scope="module")
def demo() -> dict:
    return inspect(ClusterSource(demo=True)).to_dict()


@pytest.mark.parametrize("width", [80, 120])
def test_the_default_tables_fit_and_keep_every_header_whole(demo: dict, width: int) -> None:
    text = render(overview_renderable(demo, with_nodes=True), width)
    assert_readable(text, width, DEFAULT, first="HARDWARE")
    assert header_cells(text, "NODE") == NODES
    for bucket in demo["vendors"]:  # each hardware row carries its own figures, numbers right-aligned
        [row] = body_rows(text, bucket["profile_id"])
        cells = dict(zip(DEFAULT, row))
        assert [cells[h].strip() for h in ("NODES", "DEVICES", "TOTAL", "IN USE")] == \
            [str(bucket[k]) for k in ("nodes", "devices", "allocatable", "allocated")]
        for header in DEFAULT[1:]:
            assert_right_aligned(cells[header])
    for node in demo["nodes"]:  # node names are never folded into two lines
        assert body_rows(text, node["name"]), node["name"]


def test_wide_shows_every_column_with_names_and_products(demo: dict) -> None:
    text = render(overview_renderable(demo, with_nodes=True, wide=True), 240)
    assert header_cells(text, "HARDWARE") == ["HARDWARE", "NODES", "DEVICES", "PARTITIONS", "TOTAL", "IN USE", "FREE",
                                              "SCHEDULABLE FREE", "VRAM (GiB)", "VRAM SOURCE", "PRODUCTS", "VIA"]
    assert "HELD BY" in header_cells(text, "NODE") and "PARTITIONS" in header_cells(text, "NODE")
    for bucket in demo["vendors"]:
        assert bucket["display_name"] in text
    narrow = render(overview_renderable(demo, with_nodes=True), 80)
    assert "PRODUCTS" not in narrow and "HELD BY" not in narrow


def test_pending_requests_stay_visible_outside_wide(demo: dict) -> None:
    pending = [b for b in demo["vendors"] if b["pending"]["requests"]]
    assert pending, "the demo cluster has a pending request"
    text = render(overview_renderable(demo, with_nodes=False), 80)
    for bucket in pending:
        assert f"{bucket['profile_id']} pending: {bucket['pending']['units']} for" in text
