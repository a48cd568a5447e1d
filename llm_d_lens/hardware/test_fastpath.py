"""``lens hardware list/resolve`` answered from the registry snapshot print what the full command prints.

Every run is a real process. The fast path serves only the ``lens`` script run as a user runs it
(``cli.main()`` without arguments); ``cli.main(argv)`` always takes the full path (Typer, pydantic,
discovery), so it is the reference here. That the fast path really served a run is checked by
what it imported (``-X importtime``): neither pydantic nor Typer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llm_d_lens.hardware import snapshot
from llm_d_lens.hardware.conftest import PluginFactory, minimal_profile

#: the full path: main(argv) never replays and never takes the fast path
FULL = "import sys\nfrom llm_d_lens.cli import main\nraise SystemExit(main(sys.argv[1:]))\n"
CHECKOUT = Path(snapshot.PACKAGE).parent.resolve()
#: the ``lens`` script's own code (``lifetime.console`` is what the console script runs)
SCRIPT = "from llm_d_lens.lifetime import console\nconsole()\n"

COMMANDS = [
    ["hardware", "list"],
    ["hardware", "list", "-o", "wide"],
    ["hardware", "list", "-o", "json"],
    ["hardware", "list", "--output=yaml"],
    ["hardware", "list", "--output", "name"],
    ["hardware", "resolve", "--resource", "nvidia.com/gpu", "--label", "llm-d.ai/accelerator-vendor=amd",
     "--label", "llm-d.ai/accelerator-variant=gpu"],
    ["hardware", "resolve", "--key", "AMD", "--device-class", "gpu.nvidia.com", "--dra-driver", "gpu.amd.com",
     "--aic-system", "h100_sxm", "--resource=example.com/unknown", "-o", "wide"],
    ["hardware", "resolve", "--label", "llm-d.ai/accelerator-vendor=intel", "-o", "json"],  # ambiguous
    ["hardware", "resolve", "--label", "cloud.google.com/gke-tpu-accelerator=tpu-v6e-slice", "-o", "yaml"],
    # forms the fast path leaves to the full command, which must still answer them as before
    ["hardware", "resolve", "--key", "no-such-hardware"],
    ["hardware", "resolve", "--label", "novalue"],
    ["hardware", "resolve"],
    ["hardware", "list", "-o", "bogus"],
    ["hardware", "list", "--help"],
]


def _env(cache: Path, site: Path | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LENS_RESULT_CACHE", "COLUMNS", "FORCE_COLOR", "PYTHONPATH")}
    env.update(LENS_CACHE_DIR=str(cache), LENS_RESULT_CACHE="0", **extra)
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return env


def _run(code: str, args: list[str], env: dict[str, str], *, imports: bool = False) -> tuple[int, str, str]:
    # -P: sys.path as the ``lens`` script has it (no working directory, so no build folder of this checkout)
    argv = [sys.executable, "-P", *(["-X", "importtime"] if imports else []), "-c", code, *args]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    return done.returncode, done.stdout, done.stderr


def _imported(stderr: str) -> set[str]:
    return {line.split("|")[-1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def _fast_path_served(args: list[str], env: dict[str, str]) -> bool:
    imported = _imported(_run(SCRIPT, args, env, imports=True)[2])
    assert "llm_d_lens.cli" in imported  # the probe itself works
    return not ({"pydantic", "typer"} & imported)


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_first_run_prints_what_the_full_command_prints(args, tmp_path):
    """An empty cache, no plugin: the bundled registry answers, and the output is the full command's, byte for byte."""
    assert _run(SCRIPT, args, _env(tmp_path / "fast")) == _run(FULL, args, _env(tmp_path / "full"))


def test_a_first_run_needs_neither_pydantic_nor_typer(tmp_path):
    for args in COMMANDS[:9]:
        assert _fast_path_served(args, _env(tmp_path / "cache")), args
    assert not _fast_path_served(["hardware", "resolve", "--key", "no-such-hardware"], _env(tmp_path / "cache"))


@pytest.mark.parametrize("extra", [{"COLUMNS": "80"}, {"COLUMNS": "60"}, {"FORCE_COLOR": "1"}, {"COLUMNS": "200", "FORCE_COLOR": "1"}],
                         ids=lambda extra: ",".join(f"{k}={v}" for k, v in extra.items()))
def test_tables_rich_must_lay_out_come_out_the_same(extra, tmp_path):
    """Too wide for plain text (80, 60 columns) or coloured: the fast path prints through Rich, as the command does."""
    for args in (COMMANDS[0], COMMANDS[1], COMMANDS[6]):
        assert _run(SCRIPT, args, _env(tmp_path / "fast", **extra)) == _run(FULL, args, _env(tmp_path / "full", **extra)), args


@pytest.fixture
def site(plugins: PluginFactory) -> Path:
    plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme", display_name="Acme One")]})
    return plugins.root


def test_with_a_plugin_the_registry_a_full_run_built_answers_the_next_run(site, tmp_path):
    cache = tmp_path / "cache"
    args = ["hardware", "list", "-o", "json"]
    env = _env(cache, site)
    assert not _fast_path_served(args, env)  # a plugin: the bundled registry does not apply, nothing stored yet
    assert list(cache.glob("registry-*.json"))
    assert _fast_path_served(args, env)
    for args in COMMANDS[:9] + [["hardware", "resolve", "--key", "acme", "--resource", "acme.example.com/npu"]]:
        assert _run(SCRIPT, args, env) == _run(FULL, args, _env(tmp_path / "full", site)), args
    assert "Acme One" in _run(SCRIPT, ["hardware", "list"], env)[1]


def test_editing_or_removing_a_plugin_is_seen_at_once(plugins, tmp_path):
    module = plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme", display_name="Acme One")]})
    cache, args = tmp_path / "cache", ["hardware", "list", "-o", "json"]
    env = _env(cache, plugins.root)
    _run(SCRIPT, args, env)
    assert _fast_path_served(args, env)
    (plugins.root / module / "acme.json").write_text(json.dumps([minimal_profile("acme", display_name="Acme Two")]))
    assert "Acme Two" in _run(SCRIPT, args, env)[1]
    shutil.rmtree(next(plugins.root.glob("acme_lens-*.dist-info")))
    rows = json.loads(_run(SCRIPT, args, env)[1])
    assert "acme" not in [row["id"] for row in rows] and "nvidia" in [row["id"] for row in rows]


def test_a_setting_that_blocks_hardware_is_honoured(tmp_path):
    args = ["hardware", "list", "-o", "name"]
    env = _env(tmp_path / "cache", LENS_PROFILES_BLOCK="amd")
    assert _run(SCRIPT, args, env) == _run(FULL, args, env)
    assert "amd" not in _run(SCRIPT, args, env)[1].split()
    assert _fast_path_served(args, env)  # the second run: from the registry the first one stored


def test_a_broken_plugin_is_never_served_from_a_snapshot(plugins, tmp_path):
    plugins.make("broken-lens", module_source="raise RuntimeError('broken on import')",
                 profile_entry_points={"broken": "broken_lens:load"})
    env = _env(tmp_path / "cache", plugins.root)
    for _ in range(2):
        code, out, _ = _run(SCRIPT, ["hardware", "list"], env)
        assert code == 0 and "broken" in out
    assert not list((tmp_path / "cache").glob("registry-*.json"))
    assert not _fast_path_served(["hardware", "list"], env)


def _script_path() -> list[str]:
    """``sys.path`` as the ``lens`` script has it: without this checkout's root (and its build folder)."""
    return [p for p in sys.path if p and Path(p).resolve() != CHECKOUT]


def _copy_inputs(tmp_path: Path) -> Path:
    stored = json.loads(Path(snapshot.BUNDLED).read_text())
    package = tmp_path / "llm_d_lens"
    for rel in stored["inputs"]:
        target = package / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(snapshot.PACKAGE) / rel, target)
    return package


def test_the_bundled_registry_is_refused_once_a_file_it_was_built_from_changes(tmp_path, monkeypatch):
    package = _copy_inputs(tmp_path)
    monkeypatch.setattr(snapshot, "PACKAGE", str(package))
    env: dict[str, str] = {}
    path = _script_path()
    assert snapshot.bundled(env, path) is not None
    assert snapshot.bundled({"LENS_PROFILES_BLOCK": "amd"}, path) is None
    profile = package / "hardware" / "profiles" / "amd.json"
    original = profile.read_text()
    profile.write_text(original.replace("AMD Instinct GPU", "AMD Instinct"))
    assert snapshot.bundled(env, path) is None
    profile.write_text(original)
    assert snapshot.bundled(env, path) is not None
    (package / "hardware" / "profiles" / "new.json").write_text("{}")  # a new bundled profile
    assert snapshot.bundled(env, path) is None
    (package / "hardware" / "profiles" / "new.json").unlink()
    (package / "hardware" / "rules.py").write_text("# changed\n", encoding="utf-8")  # validation code
    assert snapshot.bundled(env, path) is None


def test_the_bundled_registry_is_refused_when_another_distribution_declares_hardware(plugins):
    assert snapshot.bundled({}, _script_path()) is not None
    plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme")]})  # on sys.path (the fixture prepends it)
    assert snapshot.bundled({}, _script_path()) is None
    zipped = plugins.root / "eggs.zip"
    zipped.write_bytes(b"")
    assert snapshot.bundled({}, [str(zipped), *_script_path()[1:]]) is None  # distributions this scan cannot see
