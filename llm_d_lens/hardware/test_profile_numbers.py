"""Numbers and text in profiles: finite, bounded, encodable; otherwise a coded refusal with path and value.

From a file (JSON text) and from a plugin (Python objects, which never pass through a JSON
reader): NaN, Infinity and ``1e400`` in ``scale`` and ``memory_gib``, integer literals over the
interpreter's digit limit, lone surrogates in ``ui.labels``.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_d_lens.cli.app import main
from llm_d_lens.testing.plugins import bundled
from llm_d_lens.hardware.errors import ProfileInvalid
from llm_d_lens.hardware.loader import load_profile_file, validate_payload

MEMORY = ("planning", "memory_models", "NVIDIA-H100-80GB-HBM3", "memory_gib")
SCALE = ("telemetry", "device_metric_sources", "power", "scale")


def with_value(path: tuple[str, ...], value, base: str = "nvidia") -> dict:
    payload = bundled(base)
    target = payload
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return payload


def issues_of(payload) -> list[tuple[str, str]]:
    with pytest.raises(ProfileInvalid) as caught:
        validate_payload(payload, "plugin.json")
    return [(issue.path, str(issue)) for issue in caught.value.issues]


MEMORY_PATH = "$.planning.memory_models.NVIDIA-H100-80GB-HBM3.memory_gib"
SCALE_PATH = "$.telemetry.device_metric_sources.power.scale"

PLUGIN_VALUES = [
    ("memory_gib NaN", MEMORY, float("nan"), MEMORY_PATH, "is not a finite number"),
    ("memory_gib Infinity", MEMORY, float("inf"), MEMORY_PATH, "is not a finite number"),
    ("memory_gib -Infinity", MEMORY, float("-inf"), MEMORY_PATH, "is not a finite number"),
    ("memory_gib over 1 PiB", MEMORY, 2.0e6, MEMORY_PATH, "must be at most 1048576.0"),
    ("memory_gib as a 5000-digit integer", MEMORY, 10**5000, MEMORY_PATH, "is out of range"),
    ("scale NaN", SCALE, float("nan"), SCALE_PATH, "is not a finite number"),
    ("scale Infinity", SCALE, float("inf"), SCALE_PATH, "is not a finite number"),
    ("scale zero", SCALE, 0, SCALE_PATH, "greater than 0"),
    ("scale negative", SCALE, -1.0, SCALE_PATH, "greater than 0"),
    ("scale 1e13", SCALE, 1e13, SCALE_PATH, "must be at most 1000000000000.0"),
    ("lone surrogate in ui.labels", ("ui", "labels", "vendor"), "NVIDIA \udc80", "$.ui.labels.vendor",
     "is not valid Unicode text (a lone surrogate)"),
    ("lone surrogate as a ui.labels key", ("ui", "labels"), {"\ud800": "x"}, "$.ui.labels",
     "has a key that is not printable Unicode text"),
    ("lone surrogate in the display name", ("display_name",), "\ud83d", "$.display_name", "lone surrogate"),
]


@pytest.mark.parametrize("name,path,value,where,message", PLUGIN_VALUES, ids=[c[0] for c in PLUGIN_VALUES])
def test_a_plugin_payload_with_an_unreadable_value_is_refused_at_its_path(name, path, value, where, message):
    found = issues_of(with_value(path, value))
    assert any(p == where and message in text for p, text in found), found
    for _, text in found:
        text.encode("utf-8")  # every message can be printed and served


FILE_TEXTS = [
    ("memory_gib NaN", "NaN", MEMORY_PATH, 'is not a finite number (value: "NaN")'),
    ("memory_gib Infinity", "Infinity", MEMORY_PATH, "is not a finite number (value: \"Infinity\")"),
    ("memory_gib 1e400", "1e400", MEMORY_PATH, 'is not a finite number (beyond the range of a double) (value: "1e400")'),
    ("memory_gib with 5000 digits", "9" * 5000, MEMORY_PATH, "is an integer literal over 100 digits"),
    ("memory_gib -1e400", "-1e400", MEMORY_PATH, "is not a finite number"),
]


@pytest.mark.parametrize("name,literal,where,message", FILE_TEXTS, ids=[c[0] for c in FILE_TEXTS])
def test_a_profile_file_with_an_unreadable_number_is_refused_by_validate_with_path_and_no_traceback(
        tmp_path, capsys, name, literal, where, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bundled("nvidia")).replace('"memory_gib": 80', f'"memory_gib": {literal}', 1))
    with pytest.raises(ProfileInvalid) as caught:
        load_profile_file(path)
    assert [i.path for i in caught.value.issues] == [where]
    assert message in str(caught.value.issues[0])
    code = main(["hardware", "validate", str(path), "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 1 and "Traceback" not in err
    [result] = json.loads(out)
    assert result["valid"] is False and result["issues"][0]["path"] == where


def test_a_lone_surrogate_escaped_in_a_profile_file_is_refused(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bundled("nvidia")).replace('"labels": {', '"labels": {"extra": "\\udc80", ', 1))
    with pytest.raises(ProfileInvalid) as caught:
        load_profile_file(path)
    assert [i.path for i in caught.value.issues] == ["$.ui.labels.extra"]


def test_the_capabilities_api_never_meets_an_unencodable_label(monkeypatch):
    """What made /api/v1/hardware/capabilities answer 500 is refused before registration."""
    payload = with_value(("ui", "labels", "vendor"), "\udc80")
    with pytest.raises(ProfileInvalid):
        validate_payload(payload, "plugin")


NUMBER = st.one_of(st.floats(), st.integers(min_value=-(10**30), max_value=10**30),
                   st.sampled_from([float("nan"), float("inf"), 10**400, 1e308, 5e-324, 0, -0.0]))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(memory=NUMBER, scale=NUMBER)
def test_any_number_in_scale_or_memory_gib_is_refused_or_finite_and_in_bounds(memory, scale):
    payload = with_value(MEMORY, memory)
    payload["telemetry"]["device_metric_sources"]["power"]["scale"] = scale
    try:
        profile = validate_payload(payload, "fuzz.json")
    except ProfileInvalid as exc:
        assert exc.issues and all(issue.path.startswith("$") for issue in exc.issues)
        json.dumps(exc.to_problem(), allow_nan=False).encode("utf-8")
        return
    gib = profile.planning.memory_models["NVIDIA-H100-80GB-HBM3"].memory_gib
    factor = profile.telemetry.device_metric_sources["power"].scale
    assert 0 < gib <= 1024 * 1024 and 0 < factor <= 1e12
    json.dumps(profile.to_data(), allow_nan=False)


def test_a_profile_with_thousands_of_problems_lists_a_bounded_number_of_them():
    from llm_d_lens.errors import MAX_REPORTED

    payload = bundled("nvidia")
    payload.update({f"unknown_{i}": "x" * 1000 for i in range(2000)})
    with pytest.raises(ProfileInvalid) as caught:
        validate_payload(payload, "many.json")
    assert len(caught.value.issues) == 2000  # all kept for the caller that wants them
    message = caught.value.message
    assert message.count("\n") == MAX_REPORTED + 1 and message.endswith(f"... and {2000 - MAX_REPORTED} more")
    problem = caught.value.to_problem()
    assert len(json.dumps(problem)) < 60_000
