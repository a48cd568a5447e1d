"""The attack catalogue of issue 11: every way a plugin can misbehave, one test each.

Each installs a misbehaving plugin beside a good one (real dist-info, real entry points) and runs
the real CLI in a fresh process: the good plugin and every built-in stay registered, the bad one
is named (distribution, entry point, kind, reason), ``-o json`` still parses, nothing is a traceback.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from llm_d_lens.testing.plugins import minimal_profile

BUILT_INS = {"amd", "cpu", "google-tpu", "intel-gaudi", "intel-xpu", "nvidia"}

ATTACKS = {
    # name: (module source, where the entry point points, expected kind, a phrase of the reason)
    "import-error": ("import vendor_sdk_that_is_not_installed\n", "load", "import", "ModuleNotFoundError"),
    "system-exit": ("import sys\nsys.exit(3)\n", "load", "import", "SystemExit: 3"),
    "keyboard-interrupt": ("raise KeyboardInterrupt\n", "load", "import", "KeyboardInterrupt"),
    "base-exception": ("class Odd(BaseException):\n    pass\nraise Odd('not an Exception')\n", "load", "import",
                       "Odd: not an Exception"),
    "raises-in-call": ("def load():\n    raise RuntimeError('vendor bug')\n", "load", "call", "RuntimeError: vendor bug"),
    "exits-in-call": ("def load():\n    raise SystemExit('bye')\n", "load", "call", "SystemExit: bye"),
    "cycle": ("def load():\n    p = {'id': 'cycle'}\n    p['self'] = p\n    return [p]\n", "load", "payload",
              "not JSON (ValueError: Circular reference detected)"),
    "object": ("def load():\n    return [object()]\n", "load", "payload", "not JSON (TypeError"),
    "nan": ("def load():\n    return [{'id': float('nan')}]\n", "load", "payload", "not JSON (ValueError"),
    "not-callable": ("load = 42\n", "load", "not-callable", "is not callable"),
    "prints-at-import": ("print('hello from the vendor')\ndef load():\n    return []\n", "load", "output",
                         "hello from the vendor"),
    "writes-fd-1": ("import os\nos.write(1, b'{not json')\ndef load():\n    return []\n", "load", "output", "{not json"),
    "hard-crash": ("import os\nos._exit(7)\n", "load", "crashed", "exit code 7"),
    "hang": ("import time\ntime.sleep(120)\n", "load", "timeout", "did not finish loading within 1 s"),
}


def lens(plugins, *args: str, timeout: str = "1") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(plugins.root), *sys.path]), LENS_PLUGINS_TIMEOUT=timeout)
    return subprocess.run([sys.executable, "-m", "llm_d_lens.cli", *args], capture_output=True, text=True, env=env,
                          timeout=120)


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_misbehaving_plugin_is_skipped_and_named_and_everything_else_works(plugins, attack):
    source, attr, kind, phrase = ATTACKS[attack]
    plugins.make(f"aaa-{attack}", version="6.6.6", module_source=source,
                 profile_entry_points={attack: f"aaa_{attack.replace('-', '_')}_lens:{attr}"})
    plugins.make("zzz-good", profiles={"good": [minimal_profile("good")]})  # loads after the bad one

    listed = lens(plugins, "hardware", "list", "-o", "json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)  # nothing the plugin printed reached stdout
    registered = {r["id"] for r in rows if r["status"] == "registered"}
    assert BUILT_INS | {"good"} <= registered
    [failed] = [r for r in rows if r["status"] != "registered"]
    assert failed["entry_point"] == attack and failed["distribution"] == f"aaa-{attack} 6.6.6"
    assert failed["status"] == kind and phrase in failed["reason"], failed
    assert "Traceback" not in listed.stderr and "hello from the vendor" not in listed.stderr


def test_other_commands_print_one_warning_and_doctor_exits_non_zero(plugins):
    plugins.make("exiter", module_source="import sys\nsys.exit(3)\n", profile_entry_points={"exiter": "exiter_lens:x"})
    plugins.make("printer", module_source="print('noise')\ndef load():\n    return []\n",
                 profile_entry_points={"printer": "printer_lens:load"})
    resolved = lens(plugins, "hardware", "resolve", "--resource", "amd.com/gpu", "-o", "json")
    assert resolved.returncode == 0 and json.loads(resolved.stdout)[0]["id"] == "amd"
    warnings = [line for line in resolved.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: 2 hardware plugin problems, skipped: exiter (exiter: import), printer (printer: output); "
                        "run 'lens hardware doctor' for the reasons"]

    asked = lens(plugins, "hardware", "show", "exiter")
    assert asked.returncode == 1 and "exiter 1.0.0" in asked.stderr and "SystemExit: 3" in asked.stderr

    doctor = lens(plugins, "hardware", "doctor", "-o", "json")
    assert doctor.returncode == 1
    report = json.loads(doctor.stdout)
    assert report["ok"] is False and {p["id"] for p in report["profiles"]} == BUILT_INS
    assert sorted((f["name"], f["kind"]) for f in report["failures"]) == [("exiter", "import"), ("printer", "output")]


COUNTING = """
import json, pathlib
HERE = pathlib.Path(__file__).parent
def load():
    runs = HERE.parent / "runs"  # beside the package: a file inside it is part of what the cache is keyed on
    runs.write_text(str(int(runs.read_text()) + 1) if runs.exists() else "1")
    return json.loads((HERE / "profile.json").read_text())
"""


def test_load_results_are_cached_until_the_installed_set_changes_and_doctor_always_reloads(plugins):
    module = plugins.make("acme-lens", module_source=COUNTING, profile_entry_points={"acme": "acme_lens_lens:load"})
    (plugins.root / module / "profile.json").write_text(json.dumps([minimal_profile("acme")]))
    runs = plugins.root / "runs"
    for _ in range(2):
        assert "acme" in {r["id"] for r in json.loads(lens(plugins, "hardware", "list", "-o", "json").stdout)}
    assert runs.read_text() == "1"  # the second command read the cached outcome
    assert lens(plugins, "hardware", "doctor", "-o", "json").returncode == 0
    assert runs.read_text() == "2"  # doctor loads afresh
    info = next(plugins.root.glob("acme_lens-*.dist-info"))  # an upgrade rewrites the metadata
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-lens\nVersion: 2.0.0\n")
    acme = next(r for r in json.loads(lens(plugins, "hardware", "list", "-o", "json").stdout) if r["id"] == "acme")
    assert acme["origins"] == ["entry point 'acme' of acme-lens 2.0.0"] and runs.read_text() == "3"


def test_a_real_ctrl_c_stops_lens_and_the_plugin_loader_without_a_traceback(plugins, tmp_path):
    pid_file = tmp_path / "worker.pid"
    plugins.make("sleeper", module_source=f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                                          "time.sleep(600)\n", profile_entry_points={"sleeper": "sleeper_lens:x"})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(plugins.root), *sys.path]), LENS_PLUGINS_TIMEOUT="600")
    process = subprocess.Popen([sys.executable, "-m", "llm_d_lens.cli", "hardware", "list", "-o", "json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        for _ in range(600):  # until the plugin is inside its import
            if pid_file.exists() and pid_file.read_text():
                break
            assert process.poll() is None
            time.sleep(0.1)
        os.killpg(process.pid, signal.SIGINT)  # what a terminal sends the whole foreground group
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130 and "Traceback" not in err and out == ""  # click's exit code for Ctrl-C
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)  # the loading process did not outlive Lens


def test_a_loader_killed_from_outside_is_reported_but_not_cached(plugins):
    from llm_d_lens.hardware.isolation import Outcome, load_entry_points, run_isolated

    source = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"  # what the OOM killer would do
    plugins.make("victim", module_source=source, profile_entry_points={"victim": "victim_lens:x"})
    ep = EntryPoint("victim", "victim_lens:x", "llm_d_lens.hardware.profiles")
    [outcome] = run_isolated([{"name": ep.name, "value": ep.value, "group": ep.group}], timeout=30)
    assert outcome == Outcome(error="loading was interrupted (exit code -9); it is tried again on the next run",
                              kind="interrupted")
    load_entry_points([ep], timeout=30)
    assert list(Path(os.environ["LENS_CACHE_DIR"]).glob("plugins-*.json")) == []


def test_a_segfaulting_profile_plugin_is_a_crash_named_by_its_signal_and_the_cache_stays_on(plugins):
    """It was reported as "interrupted" (every negative exit code was) and, never cached, cost every run a reload."""
    from llm_d_lens.hardware.isolation import load_entry_points

    plugins.make("segv", module_source="import ctypes\nctypes.string_at(0)\n", profile_entry_points={"segv": "segv_lens:x"})
    plugins.make("zgood", profiles={"zgood": [minimal_profile("zgood")]})
    eps = [EntryPoint("segv", "segv_lens:x", "llm_d_lens.hardware.profiles"),
           EntryPoint("zgood", "zgood_lens:load_zgood", "llm_d_lens.hardware.profiles")]
    crashed, good = load_entry_points(eps, timeout=30)
    assert crashed.kind == "crashed" and "killed by SIGSEGV" in crashed.error
    assert good.error is None and good.payloads[0]["id"] == "zgood"  # the next one loads in a new child
    assert len(list(Path(os.environ["LENS_CACHE_DIR"]).glob("plugins-*.json"))) == 1
