"""A stored pass is keyed on the payload and on every source the check runs; only passes are stored."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llm_d_lens.hardware import verdicts
from llm_d_lens.hardware.discovery import canonical, discover
from llm_d_lens.hardware.settings import PluginSettings
from llm_d_lens.testing.floors import imports
from llm_d_lens.testing.plugins import bundled, minimal_profile

PACKAGE = Path(verdicts.__file__).resolve().parents[1]

PROBE = """
import json, sys
from llm_d_lens.hardware.registry import get_registry
registry = get_registry()
print(json.dumps({"ids": registry.ids(), "network": [p.id for p in registry.network_profiles()],
                  "failures": len(registry.failures), "rules": "llm_d_lens.hardware.rules" in sys.modules}))
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("LENS_CACHE_DIR", str(folder))
    return folder


def stored(cache: Path) -> set[str]:
    [path] = cache.glob("checked-*.json")
    return set(json.loads(path.read_text())["passed"])


def test_the_checking_sources_are_every_module_the_check_imports():
    edges: dict[str, set[str]] = {}
    for found in imports(PACKAGE):
        edges.setdefault(found.module, set()).add(found.target)
    reached, todo = set(), ["llm_d_lens.hardware.loader"]
    while todo:
        module = todo.pop()
        if module in reached:
            continue
        reached.add(module)
        todo += sorted(edges.get(module, ()))
    files = {name.removeprefix("llm_d_lens.").replace(".", "/") for name in reached}
    files = {f"{name}/__init__.py" if (PACKAGE / name).is_dir() else f"{name}.py" for name in files}
    assert files | {"hardware/schema.json"} == set(verdicts.CHECKING_SOURCES)


def test_a_second_run_decodes_stored_passes_without_the_rules_and_registers_the_same(cache):
    env = dict(os.environ, LENS_CACHE_DIR=str(cache))
    first, second = (json.loads(subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                                               check=True, timeout=120).stdout) for _ in range(2))
    assert first["rules"] is True and second["rules"] is False
    assert {k: v for k, v in first.items() if k != "rules"} == {k: v for k, v in second.items() if k != "rules"}
    assert len(first["ids"]) >= 6 and first["network"] and first["failures"] == 0
    assert len(stored(cache)) == len(first["ids"]) + len(first["network"])  # one pass per bundled payload


def test_a_refused_payload_is_never_stored_and_is_refused_on_every_run(cache, plugins):
    broken = minimal_profile("acme")
    broken["upstream_variant"] = "../escape"  # decodes, then a rule refuses it
    plugins.make("acme-lens", profiles={"acme": [broken]})
    for _ in range(2):
        found = discover(PluginSettings.from_env({}))
        [failure] = [f for f in found.failures if f.name == "acme"]
        assert failure.kind == "invalid" and "$.upstream_variant" in failure.reason
    assert verdicts.payload_digest(canonical(broken)) not in stored(cache)


def test_a_stored_pass_is_trusted_only_for_that_exact_content_and_never_by_a_full_check(cache, plugins):
    """A forged pass for a refused payload shows that the store is what skips the rules, and doctor's way ignores it."""
    broken = minimal_profile("acme")
    broken["upstream_variant"] = "../escape"
    plugins.make("acme-lens", profiles={"acme": [broken]})
    discover(PluginSettings.from_env({}))
    [path] = cache.glob("checked-*.json")
    path.write_text(json.dumps({"format": verdicts.FORMAT, "passed": sorted(stored(cache) | {
        verdicts.payload_digest(canonical(broken))})}))
    assert "acme" in [e.profile.id for e in discover(PluginSettings.from_env({})).profiles]
    assert "acme" in [f.name for f in discover(PluginSettings.from_env({}), use_cache=False).failures]


def test_an_edit_of_any_checking_source_changes_the_key(tmp_path):
    copy = tmp_path / "llm_d_lens"
    for name in verdicts.CHECKING_SOURCES:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PACKAGE / name, copy / name)
    before = verdicts.checker_digest(str(copy))
    assert before == verdicts.checker_digest(str(PACKAGE))
    keys = {before}
    for name in ("hardware/rules.py", "hardware/schema.json", "errors.py"):
        with open(copy / name, "ab") as handle:
            handle.write(b"\n")
        keys.add(verdicts.checker_digest(str(copy)))
    (copy / "hardware/regex_safety.py").unlink()
    keys.add(verdicts.checker_digest(str(copy)))
    assert len(keys) == 5


def test_an_unreadable_or_unwritable_store_only_costs_a_check(cache, monkeypatch):
    cache.mkdir()
    path = cache / f"checked-{verdicts.checker_digest()}.json"
    path.write_text("{not json")
    found = discover(PluginSettings.from_env({}))
    assert {e.profile.id for e in found.profiles} >= {"amd", "nvidia"} and not found.failures
    assert stored(cache)  # written anew
    monkeypatch.setenv("LENS_CACHE_DIR", str(path))  # a file where the folder should be
    assert {e.profile.id for e in discover(PluginSettings.from_env({})).profiles} >= {"amd", "nvidia"}


def test_a_stored_pass_decodes_to_the_profile_the_full_check_gives(cache):
    from llm_d_lens.hardware.loader import validate_payload

    discover(PluginSettings.from_env({}))  # stores the passes
    again = {e.profile.id: e.profile for e in discover(PluginSettings.from_env({})).profiles}
    for profile_id in ("amd", "nvidia", "intel-gaudi"):
        assert again[profile_id] == validate_payload(bundled(profile_id), "test")


def test_the_first_run_stores_its_passes_whole_without_tempfile(cache):
    """The first run after an install writes the store through a fresh, exclusively created name and
    renames it into place: nothing half-written or left behind, and no tempfile module to import."""
    probe = PROBE + "print(json.dumps(sorted(m for m in ('tempfile', 'shutil', 'random') if m in sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.splitlines()
    assert json.loads(out[0])["rules"] is True  # nothing stored yet: every payload was checked in full
    assert json.loads(out[1]) == []
    assert sorted(p.name for p in cache.iterdir() if p.name.startswith(".")) == []
    assert len(stored(cache)) >= len(json.loads(out[0])["ids"])  # a pass for every registered profile


def test_a_planted_name_is_never_written_through(cache, monkeypatch):
    """The temporary name is opened exclusively: when it exists (a planted symlink), the store is skipped."""
    cache.mkdir()
    target = cache.parent / "elsewhere"
    monkeypatch.setattr(verdicts.os, "getpid", lambda: 4242)
    monkeypatch.setattr(verdicts.os, "urandom", lambda n: b"\0" * n)
    (cache / f".checked-4242-{'00' * 6}").symlink_to(target)
    store = verdicts.Verdicts(str(cache / "checked-x.json"), set())
    store.record_pass('{"id": "x"}')
    store.save()
    assert not target.exists() and not (cache / "checked-x.json").exists()
