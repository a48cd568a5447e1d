"""Replayed ``lens hardware list/show/resolve`` output is the output the command gives, and goes stale never.

Every run here is a real ``python -m llm_d_lens.cli`` process (the replay only serves real
invocations), with plugins that are real dist-info folders on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llm_d_lens import result_cache
from llm_d_lens.hardware.conftest import PluginFactory, minimal_profile


def _env(site: Path, cache: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LENS_RESULT_CACHE"}
    env.update(PYTHONPATH=str(site), LENS_CACHE_DIR=str(cache), COLUMNS="120", **extra)
    return env


def _lens(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-m", "llm_d_lens.cli", *args], capture_output=True, text=True,
                          env=env, timeout=120)
    return done.returncode, done.stdout, done.stderr


def _stored(cache: Path) -> list[Path]:
    return sorted(cache.glob("result-*.json"))


@pytest.fixture
def site(plugins: PluginFactory) -> Path:
    plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme")]})
    plugins.make("broken-lens", module_source="raise RuntimeError('broken on import')",
                 profile_entry_points={"broken": "broken_lens:load"})
    return plugins.root


def test_a_replay_prints_exactly_what_the_command_printed(site, tmp_path):
    cache = tmp_path / "cache"
    commands = [
        ["hardware", "list"],
        ["hardware", "show", "acme"],  # its stderr carries the warning about the broken plugin
        ["hardware", "resolve", "--resource", "acme.example.com/npu", "--device-class", "gpu.nvidia.com", "-o", "json"],
        ["hardware", "show", "no-such-hardware"],  # refused, exit 1: replayed as such
    ]
    for args in commands:
        uncached = _lens(args, _env(site, tmp_path / "off", LENS_RESULT_CACHE="0"))
        recorded = _lens(args, _env(site, cache))
        replayed = _lens(args, _env(site, cache))
        assert recorded == uncached, args
        assert replayed == uncached, args
    assert "acme" in _lens(commands[0], _env(site, cache))[1]
    assert "broken" in _lens(commands[1], _env(site, cache))[2]  # a failure is still reported from the replay
    assert _lens(commands[3], _env(site, cache))[0] == 1
    assert len(_stored(cache)) == len(commands)


def test_the_stored_result_is_what_a_second_run_prints(site, tmp_path):
    """Proof that the second run is a replay: edit the stored text and see it printed."""
    cache, args = tmp_path / "cache", ["hardware", "list", "-o", "json"]
    _lens(args, _env(site, cache))
    [path] = _stored(cache)
    stored = json.loads(path.read_text())
    path.write_text(json.dumps({**stored, "stdout": "replayed\n"}))
    assert _lens(args, _env(site, cache))[1] == "replayed\n"
    assert _lens(["hardware", "list", "-o", "yaml"], _env(site, cache))[1] != "replayed\n"  # other arguments, other key


def test_editing_a_plugin_profile_or_upgrading_its_distribution_shows_at_once(plugins, tmp_path):
    module = plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme", display_name="Acme One")]})
    cache, args = tmp_path / "cache", ["hardware", "show", "acme", "-o", "json"]
    env = _env(plugins.root, cache)
    assert json.loads(_lens(args, env)[1])["display_name"] == "Acme One"

    (plugins.root / module / "acme.json").write_text(json.dumps([minimal_profile("acme", display_name="Acme Two")]))
    assert json.loads(_lens(args, env)[1])["display_name"] == "Acme Two"

    info = plugins.root / "acme_lens-1.0.0.dist-info"
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-lens\nVersion: 2.0.0\n")
    info.rename(plugins.root / "acme_lens-2.0.0.dist-info")
    code, out, err = _lens(["hardware", "list", "-o", "json"], env)
    assert code == 0, err
    acme = next(row for row in json.loads(out) if row["id"] == "acme")
    assert any("acme-lens 2.0.0" in origin for origin in acme["origins"]), acme["origins"]

    info = plugins.root / "acme_lens-2.0.0.dist-info"
    for item in info.iterdir():
        item.unlink()
    info.rmdir()  # uninstalled: the profile is gone at once
    code, out, _ = _lens(args, env)
    assert code == 1 and out == ""


def test_a_corrupt_or_foreign_cache_file_is_ignored_and_replaced(site, tmp_path):
    cache, args = tmp_path / "cache", ["hardware", "list", "-o", "json"]
    expected = _lens(args, _env(site, tmp_path / "off", LENS_RESULT_CACHE="0"))
    _lens(args, _env(site, cache))
    [path] = _stored(cache)
    stored = json.loads(path.read_text())
    for damaged in ("{not json", json.dumps({**stored, "key": stored["key"] + " "}), json.dumps({**stored, "code": "0"}),
                    json.dumps([1, 2]), ""):
        path.write_text(damaged)
        assert _lens(args, _env(site, cache)) == expected
        assert json.loads(path.read_text()) == stored  # rewritten from the real run


def test_a_replay_imports_neither_typer_nor_pydantic_nor_rich(site, tmp_path):
    cache, args = tmp_path / "cache", ["hardware", "list"]
    _lens(args, _env(site, cache))
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "llm_d_lens.cli", *args], capture_output=True,
                          text=True, env=_env(site, cache), timeout=120)
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "llm_d_lens.result_cache" in imported  # the probe sees imports at all
    assert not {"typer", "pydantic", "rich", "importlib.metadata", "llm_d_lens.hardware.models"} & imported


def test_the_key_follows_lens_files_but_not_its_tests(tmp_path):
    (tmp_path / "profiles").mkdir()
    profile = tmp_path / "profiles" / "acme.json"
    profile.write_text("{}")
    (tmp_path / "test_acme.py").write_text("")
    before = result_cache.tree(str(tmp_path))
    (tmp_path / "test_acme.py").write_text("assert True\n")
    assert result_cache.tree(str(tmp_path)) == before
    profile.write_text('{"id": "acme"}')
    assert result_cache.tree(str(tmp_path)) != before


def test_only_read_only_commands_are_replayed():
    groups = ["hardware", "deploy"]
    for args in ([], ["--help"], ["-h"], ["--version"], ["deploy", "--help"], ["hardware"], ["hardware", "list", "-o", "json"],
                 ["hardware", "resolve", "--resource", "x"], ["hardware", "show", "amd"]):
        assert result_cache.eligible(args, groups), args
    for args in (["hardware", "doctor"], ["hardware", "validate", "p.json"], ["hardware", "new", "x"], ["deploy", "render"],
                 ["version"], ["serve"], ["deploy", "render", "--help", "x"]):
        assert not result_cache.eligible(args, groups), args
    assert not result_cache.enabled({"LENS_RESULT_CACHE": "0"})
    assert not result_cache.enabled({"_LENS_COMPLETE": "complete_bash"})
    assert result_cache.enabled({})


def test_storing_keeps_only_the_newest_results_and_touches_no_other_file(tmp_path, monkeypatch):
    monkeypatch.setattr(result_cache, "KEEP", 3)
    env = {"LENS_CACHE_DIR": str(tmp_path)}
    (tmp_path / "plugins-abc.json").write_text("{}")  # the plugin-load cache beside it stays
    for i in range(5):
        result_cache.store(f"key {i}", env, f"out {i}\n", "", 0)
        os.utime(result_cache._path(f"key {i}", env), ns=(i * 10**9, i * 10**9))
    result_cache.store("key 5", env, "out 5\n", "", 0)
    assert len(_stored(tmp_path)) == 3 and (tmp_path / "plugins-abc.json").exists()
    kept = sorted(json.loads(p.read_text())["key"] for p in _stored(tmp_path))
    assert kept == ["key 3", "key 4", "key 5"]
