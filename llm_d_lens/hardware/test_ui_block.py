"""The ``ui`` block the console reads: tab order, chart titles and telemetry-panel defaults, validated like every field."""

from __future__ import annotations

import pytest

from llm_d_lens.testing.plugins import bundled, deep
from llm_d_lens.hardware.errors import ProfileInvalid
from llm_d_lens.hardware.loader import validate_payload


def with_ui(**ui) -> dict:
    payload = deep(bundled("amd"))
    payload["ui"] = {"icon": "Gpu", "labels": {"vendor": "AMD"}, **ui}
    return payload


def issues_of(payload: dict) -> str:
    with pytest.raises(ProfileInvalid) as caught:
        validate_payload(payload, "test.json")
    return str(caught.value)


def test_panel_defaults_are_read_with_their_defaults_filled():
    profile = validate_payload(with_ui(order=7, chart_titles={"power": "Board power"},
                                       telemetry_panel={"quantity": "temperature", "namespace": "llm-d"}), "test.json")
    assert profile.ui.order == 7 and profile.ui.chart_titles == {"power": "Board power"}
    assert (profile.ui.telemetry_panel.quantity, profile.ui.telemetry_panel.namespace) == ("temperature", "llm-d")
    assert profile.ui.telemetry_panel.range_minutes == 60
    default = validate_payload(with_ui(), "test.json").ui
    assert (default.order, default.telemetry_panel.quantity, default.telemetry_panel.namespace) == (100, "utilization", None)


@pytest.mark.parametrize(("ui", "expected"), [
    ({"telemetry_panel": {"quantity": "fan_speed"}}, "$.ui.telemetry_panel.quantity"),
    ({"telemetry_panel": {"namespace": "Not_A_Namespace"}}, "$.ui.telemetry_panel.namespace"),
    ({"telemetry_panel": {"range_minutes": 0}}, "$.ui.telemetry_panel.range_minutes"),
    ({"chart_titles": {"fan_speed": "Fans"}}, "$.ui.chart_titles"),
    ({"order": -1}, "$.ui.order"),
    ({"tab_colour": "red"}, "$.ui.tab_colour"),
])
def test_a_bad_ui_value_is_refused_naming_its_path(ui, expected):
    assert expected in issues_of(with_ui(**ui))
