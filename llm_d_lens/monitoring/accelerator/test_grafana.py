"""The Grafana dashboard: Grafana's classic dashboard JSON model, panels from the refresh's own PromQL.

The model checks are facts of Grafana's classic JSON model (a 24-column grid of panels with
``gridPos`` h/w/x/y; an expanded row is a ``row`` panel followed by its panels at the top level;
panel ids unique; each query target has a ``refId``; a ``datasource`` template variable named in
``${...}``; uid of at most 40 characters), not a copied dashboard.
"""

from __future__ import annotations

import json
import re

import pytest

from llm_d_lens.cli.app import main
from llm_d_lens.hardware.loader import validate_payload
from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.monitoring.accelerator.grafana import GRAFANA_UNITS, GRID_WIDTH, dashboard
from llm_d_lens.monitoring.accelerator.plan import plan_for
from llm_d_lens.monitoring.accelerator.queries import dashboard_query
from llm_d_lens.monitoring.accelerator.service import Selected, select
from llm_d_lens.testing.telemetry_pages import refresh
from llm_d_lens.testing.prometheus import BASE_TIMESTAMP

#: Grafana unit ids for the common units (Grafana's "Standard options > Unit" ids).
KNOWN_UNITS = {"percentunit", "bytes", "watt", "joule", "celsius", "short", "none", "Bps", "bool",
               "hertz"}  # "bool": Grafana's True/False unit; "hertz": its Hertz (1/s)
HARDWARE = ["nvidia", "amd", "intel-xpu", "intel-gaudi", "google-tpu"]


def check_classic_model(board: dict) -> None:
    for key, kind in (("title", str), ("uid", str), ("panels", list), ("schemaVersion", int), ("templating", dict),
                      ("time", dict), ("annotations", dict)):
        assert isinstance(board[key], kind), key
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,40}", board["uid"])
    variables = {v["name"]: v for v in board["templating"]["list"]}
    ids, cells = set(), set()
    for panel in board["panels"]:
        assert panel["id"] not in ids
        ids.add(panel["id"])
        grid = panel["gridPos"]
        assert set(grid) == {"h", "w", "x", "y"} and grid["h"] > 0 and 0 < grid["w"] <= GRID_WIDTH
        assert 0 <= grid["x"] and grid["x"] + grid["w"] <= GRID_WIDTH
        taken = {(x, y) for x in range(grid["x"], grid["x"] + grid["w"]) for y in range(grid["y"], grid["y"] + grid["h"])}
        assert not taken & cells, f"panel {panel['id']} overlaps another"
        cells |= taken
        if panel["type"] == "row":
            assert panel["collapsed"] is False and panel["panels"] == [] and grid["w"] == GRID_WIDTH
            continue
        uid = panel["datasource"]["uid"]
        assert panel["datasource"]["type"] == "prometheus" and uid.startswith("${") and uid[2:-1] in variables
        assert variables[uid[2:-1]]["type"] == "datasource" and variables[uid[2:-1]]["query"] == "prometheus"
        assert panel["targets"] and all(t["refId"] and t["expr"] for t in panel["targets"])
        assert panel["fieldConfig"]["defaults"]["unit"] in KNOWN_UNITS


def test_the_dashboard_follows_grafanas_classic_model():
    board = dashboard(select(HARDWARE))
    check_classic_model(board)
    rows = [p["title"] for p in board["panels"] if p["type"] == "row"]
    assert rows == [get_registry().get(h).display_name for h in HARDWARE]
    json.dumps(board)  # plain JSON, nothing a file could not hold


def test_each_row_holds_one_panel_per_quantity_with_the_refreshs_promql():
    board = dashboard(select(["amd", "google-tpu"]))
    panels = board["panels"]
    starts = [i for i, p in enumerate(panels) if p["type"] == "row"]
    for start, end, hardware in zip(starts, [*starts[1:], len(panels)], ["amd", "google-tpu"]):
        plan = plan_for(get_registry().get(hardware))
        below = panels[start + 1:end]
        assert [p["targets"][0]["expr"] for p in below] == [dashboard_query(plan, q) for q in plan.quantities]
        assert [p["fieldConfig"]["defaults"]["unit"] for p in below] == [GRAFANA_UNITS[q.quantity.unit] for q in plan.quantities]
        # every panel sits below its own row
        assert all(p["gridPos"]["y"] > panels[start]["gridPos"]["y"] for p in below)


def test_a_profiles_ui_chart_titles_name_its_panels():
    payload = get_registry().get("amd").to_data(exclude_none=True)
    payload["ui"]["chart_titles"] = {"tensor_activity": "MFMA activity"}
    profile = validate_payload(payload, "amd (test variant)")
    board = dashboard([Selected(profile, plan_for(profile))])
    titles = [p["title"] for p in board["panels"] if p["type"] != "row"]
    assert "MFMA activity" in titles and "Tensor activity" not in titles and "Utilisation" in titles


def test_every_panel_query_answers_with_the_refreshs_numbers(prometheus):
    """Importable and right: each panel's PromQL, sent to a real Prometheus, gives what the refresh reports."""
    board = dashboard(select(HARDWARE))
    devices = refresh(prometheus.url, HARDWARE).devices
    by_expr = {}
    for hardware in HARDWARE:
        plan = plan_for(get_registry().get(hardware))
        for quantity in plan.quantities:
            by_expr[dashboard_query(plan, quantity)] = (hardware, quantity)
    answered = 0
    for panel in (p for p in board["panels"] if p["type"] != "row"):
        hardware, quantity = by_expr[panel["targets"][0]["expr"]]
        rows = prometheus.query(panel["targets"][0]["expr"], at=BASE_TIMESTAMP)
        expected = {(d.node, d.device, d.sub): d.values[quantity.quantity.field] for d in devices
                    if d.hardware == hardware and quantity.quantity.field in d.values}
        got = {(r["metric"].get("lens_node", ""), r["metric"]["lens_device"], r["metric"].get("lens_sub", "")): float(r["value"][1])
               for r in rows}
        assert got.keys() == expected.keys(), panel["title"]
        assert all(got[k] == pytest.approx(v, rel=1e-12) for k, v in expected.items()), panel["title"]
        answered += bool(rows)
    assert answered >= 40  # most panels have data in the fixtures


def test_the_command_writes_a_file_and_never_replaces_one(tmp_path, capsys):
    target = tmp_path / "lens.json"
    assert main(["telemetry", "dashboard", "--hardware", "nvidia", "--output-file", str(target)]) == 0
    check_classic_model(json.loads(target.read_text()))
    target.write_text("mine")
    assert main(["telemetry", "dashboard", "--hardware", "nvidia", "--output-file", str(target)]) == 1
    assert target.read_text() == "mine"
    assert "DASHBOARD_FILE_EXISTS" in capsys.readouterr().err
    assert main(["telemetry", "dashboard", "--hardware", "nvidia", "--output-file", str(target), "--force"]) == 0
    assert json.loads(target.read_text())["panels"][0]["title"] == "NVIDIA GPU"
