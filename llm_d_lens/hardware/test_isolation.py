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


FORGER = """
import json, os
# every descriptor a plugin can find: the loader's record pipe among them
for fd in range(3, 256):
    for record in ({"done": 1, "kind": "import", "error": "forged"}, {"start": 1}, {"done": 0, "payloads": []},
                   {"done": 99, "error": "no one's"}, {"done": -1}, {"start": True}, [1, 2]):
        try:
            os.write(fd, (json.dumps(record) + "\\n").encode())
        except OSError:
            break
os._exit(0)  # before the loader's own records could correct anything
"""


def _state(pid: int) -> str:
    """A process's state letter, "gone" once it is reaped (a zombie is dead, its parent just has not reaped it)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return "gone"
    return next(line.split()[1] for line in status.splitlines() if line.startswith("State:"))


def test_a_plugin_cannot_forge_the_loader_records_of_another_distribution(plugins):
    """It wrote ``done`` for the next entry point into every descriptor, then exited: the other plugin was disabled."""
    plugins.make("aaa-forger", module_source=FORGER, profile_entry_points={"forger": "aaa_forger_lens:load"})
    plugins.make("zzz-good", profiles={"good": [minimal_profile("good")]})  # the entry point after it
    listed = lens(plugins, "hardware", "list", "-o", "json", timeout="30")
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    rows = {r["id"]: r for r in json.loads(listed.stdout)}
    assert rows["good"]["status"] == "registered"
    assert rows["forger"]["status"] == "payload"  # what it forged for itself is all it could say


SPAWNER = """
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
open({pid_file!r}, "w").write(str(child.pid))
def load():
    return [{profile!r}]
"""

HOLDER = """
import os, subprocess, sys
# a process that keeps every descriptor of the loader's, its record pipe included, and sleeps
fds = [fd for fd in range(3, 64) if os.path.exists(f"/proc/self/fd/{{fd}}")]
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], pass_fds=fds)
open({pid_file!r}, "w").write(str(child.pid))
def load():
    return [{profile!r}]
"""


@pytest.mark.parametrize("source", [SPAWNER, HOLDER], ids=["spawns", "spawns-holding-the-record-pipe"])
def test_what_a_plugin_spawns_at_import_does_not_outlive_the_load(plugins, tmp_path, source):
    pid_file = tmp_path / "spawned.pid"
    plugins.make("spawner", module_source=source.format(pid_file=str(pid_file), profile=minimal_profile("spawner")),
                 profile_entry_points={"spawner": "spawner_lens:load"})
    # a plugin timeout far past the test's own: a load that waited for the spawned process would fail the test
    listed = lens(plugins, "hardware", "list", "-o", "json", timeout="600")
    pid = int(pid_file.read_text())
    state = _state(pid)
    if state not in ("gone", "Z"):
        os.kill(pid, signal.SIGKILL)
    assert state in ("gone", "Z"), f"the process the plugin spawned is still {state}"
    assert listed.returncode == 0 and "spawner" in {r["id"] for r in json.loads(listed.stdout) if r["status"] == "registered"}


def test_a_plugin_writing_records_cannot_hold_off_its_timeout(plugins):
    spammer = ("import json, os, threading, time\n"
               "def spam():\n"
               "    while True:\n"
               "        for fd in range(3, 64):\n"
               "            try:\n"
               "                os.write(fd, b'{\"start\": 0}\\n')\n"
               "            except OSError:\n"
               "                pass\n"
               "        time.sleep(0.01)\n"
               "threading.Thread(target=spam, daemon=True).start()\n"
               "time.sleep(600)\n")
    plugins.make("spammer", module_source=spammer, profile_entry_points={"spammer": "spammer_lens:x"})
    listed = lens(plugins, "hardware", "list", "-o", "json")  # LENS_PLUGINS_TIMEOUT=1; the test's own limit is 120 s
    [row] = [r for r in json.loads(listed.stdout) if r["id"] == "spammer"]
    assert row["status"] == "timeout"


def test_a_record_too_large_to_read_is_refused_and_the_next_plugin_loads(plugins):
    from llm_d_lens.hardware import isolation

    flood = "import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'x' * (1 << 16))\n    except OSError:\n        pass\n"
    flood += "import time\nfor _ in range(2000):\n    for fd in range(3, 64):\n        try:\n            os.write(fd, b'x' * (1 << 16))\n"
    flood += "        except OSError:\n            pass\n"
    plugins.make("flood", module_source=flood, profile_entry_points={"flood": "flood_lens:x"})
    plugins.make("zgood", profiles={"zgood": [minimal_profile("zgood")]})
    entries = [{"name": "flood", "value": "flood_lens:x", "group": "llm_d_lens.hardware.profiles"},
               {"name": "zgood", "value": "zgood_lens:load_zgood", "group": "llm_d_lens.hardware.profiles"}]
    saved = isolation.MAX_RECORD_BYTES
    isolation.MAX_RECORD_BYTES = 1 << 20
    try:
        flooded, good = isolation.run_isolated(entries, timeout=60)
    finally:
        isolation.MAX_RECORD_BYTES = saved
    assert flooded.kind == "payload" and "more than 1048576 bytes" in flooded.error
    assert good.error is None and good.payloads[0]["id"] == "zgood"


def test_a_real_ctrl_c_ends_every_loader_when_distributions_load_side_by_side(plugins, tmp_path):
    pids = [tmp_path / f"worker-{n}.pid" for n in range(3)]
    for n, pid_file in enumerate(pids):
        plugins.make(f"sleeper{n}", module_source=f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                                                  "time.sleep(600)\n", profile_entry_points={f"sleeper{n}": f"sleeper{n}_lens:x"})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(plugins.root), *sys.path]), LENS_PLUGINS_TIMEOUT="600")
    process = subprocess.Popen([sys.executable, "-m", "llm_d_lens.cli", "hardware", "list", "-o", "json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        for _ in range(600):  # until two of them are inside their import (at least two load at once)
            if sum(1 for p in pids if p.exists() and p.read_text()) >= 2:
                break
            assert process.poll() is None
            time.sleep(0.1)
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130 and "Traceback" not in err and out == ""
    for pid_file in pids:
        if pid_file.exists() and pid_file.read_text():
            assert _state(int(pid_file.read_text())) in ("gone", "Z")
