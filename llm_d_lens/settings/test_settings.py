"""Every environment variable Lens reads is declared once, read one way, and listed by ``lens version``."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llm_d_lens import settings
from llm_d_lens.cli.app import main

PACKAGE = Path(__file__).resolve().parents[1]
NAME = re.compile(r"^(LENS|LLM_D)_[A-Z0-9_]+$")


def named_in_code() -> set[str]:
    """Every LENS_*/LLM_D_* name a non-test module spells, error codes (a class's ``code``) aside."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        if path.name.startswith("test_") or path.name == "conftest.py" or path.relative_to(PACKAGE).parts[0] == "testing":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        codes = {id(n.value) for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign))
                 and any(getattr(t, "id", None) == "code" for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME.match(node.value) and id(node) not in codes:
                found.add(node.value)
    return found


def test_every_variable_the_code_names_is_declared():
    assert named_in_code() - set(settings.DECLARED) == set()
    assert {"LENS_CLUSTER_DEMO", "LENS_PROMETHEUS_URL", "LENS_PLUGINS_AUTOLOAD"} <= named_in_code()  # the scan sees them


@pytest.mark.parametrize(("raw", "expected"), [("1", True), ("TRUE", True), (" yes ", True), ("On", True),
                                               ("0", False), ("false", False), ("NO", False), ("off", False)])
def test_a_flag_is_read_the_one_way(raw, expected):
    assert settings.flag("LENS_CLUSTER_DEMO", {"LENS_CLUSTER_DEMO": raw}) is expected


def test_an_unset_or_blank_flag_is_its_default_and_anything_else_is_a_coded_error():
    assert settings.flag("LENS_PLUGINS_AUTOLOAD", {}, default=True) is True
    assert settings.flag("LENS_PLUGINS_AUTOLOAD", {"LENS_PLUGINS_AUTOLOAD": "  "}, default=True) is True
    with pytest.raises(settings.SettingInvalid) as caught:
        settings.flag("LENS_CLUSTER_DEMO", {"LENS_CLUSTER_DEMO": "maybe"})
    assert caught.value.code == "SETTING_INVALID" and caught.value.details == {"variable": "LENS_CLUSTER_DEMO", "value": "maybe"}


def test_a_name_nobody_declared_cannot_be_read():
    with pytest.raises(ValueError, match="LENS_NOPE is not a Lens setting"):
        settings.text("LENS_NOPE", {})


def test_lens_version_lists_every_setting_with_its_value_and_hides_secrets(capsys, monkeypatch):
    monkeypatch.setenv("LENS_API_TOKEN", "s3cret-token")
    monkeypatch.setenv("LENS_PROMETHEUS_URL", "http://prometheus.monitoring:9090")
    assert main(["version", "-o", "json"]) == 0
    out = capsys.readouterr().out
    listed = {row["name"]: row for row in json.loads(out)["settings"]}
    assert list(listed) == [s.name for s in settings.SETTINGS]
    assert listed["LENS_PROMETHEUS_URL"]["value"] == "http://prometheus.monitoring:9090"
    assert listed["LENS_API_TOKEN"]["value"] == "set" and "s3cret-token" not in out
    assert listed["LENS_PLUGINS_TIMEOUT"]["default"] == "5" and listed["LENS_PLUGINS_TIMEOUT"]["concern"] == "plugins"


def test_a_bad_flag_stops_the_command_with_the_variable_named(tmp_path):
    env = {**os.environ, "LENS_PLUGINS_AUTOLOAD": "sometimes", "LENS_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "llm_d_lens.cli", "hardware", "list"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    err = done.stderr
    assert err.startswith("error: SETTING_INVALID: LENS_PLUGINS_AUTOLOAD=sometimes: give one of 1, true, yes, on")
    assert "Traceback" not in err


@pytest.mark.parametrize("raw", ["abc", "0", "-1", "nan", "86400"])
def test_a_plugin_timeout_that_is_no_number_of_seconds_is_refused_naming_it(raw):
    from llm_d_lens.hardware.isolation import timeout_from_env

    assert timeout_from_env({}) == 5.0 and timeout_from_env({"LENS_PLUGINS_TIMEOUT": "2.5"}) == 2.5
    with pytest.raises(settings.SettingInvalid) as caught:
        timeout_from_env({"LENS_PLUGINS_TIMEOUT": raw})
    assert caught.value.details == {"variable": "LENS_PLUGINS_TIMEOUT", "value": raw}
