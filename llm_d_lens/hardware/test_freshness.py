"""What a plugin author sees is what is installed now: an edit shows at once, a timeout is retried.

The plugin is the example project (``examples/nimbus-lens``) installed with ``pip install -e`` into a
throwaway environment, the way its author works on it. An editable install maps the package to the
project folder through an import finder and puts no folder of the package on ``sys.path``, so
anything that keys on ``sys.path`` alone never sees the author's edits.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llm_d_lens.testing.plugins import PluginFactory, minimal_profile
from llm_d_lens.testing.pip_install import editable_install, throwaway_venv

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "nimbus-lens"
PROFILE = Path("nimbus_lens") / "profiles" / "nimbus-npu.json"

API_PROBE = """
import json, sys
from fastapi.testclient import TestClient
from llm_d_lens.api.app import create_app
answer = TestClient(create_app()).get("/api/v1/hardware/nimbus-npu")
print(json.dumps({"status": answer.status_code, "display_name": answer.json().get("display_name")}))
"""


@pytest.fixture(scope="module")
def editable(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the environment's python, the plugin project it has in development mode)."""
    if not EXAMPLE.is_dir():
        pytest.skip(f"the example plugin is not here ({EXAMPLE})")
    root = tmp_path_factory.mktemp("editable")
    project = root / "nimbus-lens"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    python = throwaway_venv(root / "venv")
    editable_install(project, python)
    return python, project


def run(python: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "LENS_CACHE_DIR"}}
    env.update(LENS_CACHE_DIR=str(cache), COLUMNS="200")
    return subprocess.run([str(python), *args], capture_output=True, text=True, env=env, timeout=180)


def lens(python: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run(python, cache, "-m", "llm_d_lens.cli", *args)


def shown_names(python: Path, cache: Path) -> dict[str, str]:
    """The display name of nimbus-npu in every way a user asks for it."""
    listed = json.loads(lens(python, cache, "hardware", "list", "-o", "json").stdout)
    shown = json.loads(lens(python, cache, "hardware", "show", "nimbus-npu", "-o", "json").stdout)
    resolved = json.loads(lens(python, cache, "hardware", "resolve", "--resource", "nimbus.example.com/npu",
                               "-o", "json").stdout)
    api = json.loads(run(python, cache, "-c", API_PROBE).stdout)
    assert api["status"] == 200
    return {"list": next(r["display_name"] for r in listed if r["id"] == "nimbus-npu"),
            "show": shown["display_name"], "api": api["display_name"],
            "resolve": resolved[0]["id"]}


def test_the_install_is_one_no_path_entry_reveals(editable):
    python, project = editable
    probe = run(python, Path("/nonexistent"), "-c",
                "import sys, nimbus_lens; print(nimbus_lens.__file__); print('\\n'.join(sys.path))")
    where, *path = probe.stdout.splitlines()
    assert where.startswith(str(project))  # imported from the author's folder ...
    assert str(project) not in path  # ... which no sys.path entry names


def test_an_edit_of_an_editable_plugins_profile_shows_in_the_next_command_and_the_api(editable, tmp_path):
    python, project = editable
    cache = tmp_path / "cache"
    profile = project / PROFILE
    original = profile.read_text()
    try:
        before = shown_names(python, cache)
        assert before["list"] == before["show"] == before["api"] == "Nimbus NPU"
        assert before["resolve"] == "nimbus-npu"
        edited = json.loads(original)
        edited["display_name"] = "Nimbus NPU (edited)"
        profile.write_text(json.dumps(edited))
        after = shown_names(python, cache)  # the same cache folder: what it holds must not be served
        assert after == {**before, "list": "Nimbus NPU (edited)", "show": "Nimbus NPU (edited)",
                         "api": "Nimbus NPU (edited)"}
    finally:
        profile.write_text(original)


SLOW_ONCE = """
import json, pathlib, time
HERE = pathlib.Path(__file__).parent
BUSY = HERE.parent / "busy"  # outside the package: the plugin's own files stay the same
if BUSY.exists():
    time.sleep(30)
def load():
    return json.loads((HERE / "profile.json").read_text())
"""


def test_a_plugin_that_timed_out_once_loads_on_the_next_run(plugins: PluginFactory, tmp_path):
    module = plugins.make("slow-lens", module_source=SLOW_ONCE, profile_entry_points={"slow": "slow_lens_lens:load"})
    (plugins.root / module / "profile.json").write_text(json.dumps([minimal_profile("slow")]))
    busy = plugins.root / "busy"
    busy.write_text("the machine is busy")
    env = dict(os.environ, PYTHONPATH=str(plugins.root), LENS_CACHE_DIR=str(tmp_path / "cache"),
               LENS_PLUGINS_TIMEOUT="1")

    def listed() -> dict[str, str]:
        """Each listed id and its status: ``registered``, or how its load failed."""
        done = subprocess.run([sys.executable, "-m", "llm_d_lens.cli", "hardware", "list", "-o", "json"],
                              capture_output=True, text=True, env=env, timeout=180)
        return {row["id"]: row["status"] for row in json.loads(done.stdout)}

    assert listed()["slow"] == "timeout"
    busy.unlink()  # the machine is quiet again; nothing about the plugin changed
    assert listed()["slow"] == "registered"
