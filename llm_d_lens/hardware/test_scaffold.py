"""``lens hardware new``: what it writes installs with pip, registers, resolves and passes its own tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from llm_d_lens.cli.app import main
from llm_d_lens.testing.pip_install import env_with, pip_install, throwaway_venv


def test_a_scaffolded_plugin_installs_registers_resolves_and_passes_its_generated_tests(tmp_path, capsys):
    project = tmp_path / "quasar-lens"
    code = main(["hardware", "new", "quasar", "--vendor", "quasar", "--display-name", "Quasar NPU", "--request-model",
                 "dra", "--device-class", "npu.quasar.example.com", "--node-label", "quasar.example.com/npu=true",
                 "--provider", "--dir", str(project), "-o", "json"])
    written = json.loads(capsys.readouterr().out)
    assert code == 0 and written["distribution"] == "quasar-lens"
    assert sorted(p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file()) == [
        "README.md", "pyproject.toml", "quasar_lens/__init__.py", "quasar_lens/profiles/quasar.json",
        "quasar_lens/provider.py", "tests/test_contract.py"]
    assert main(["hardware", "validate", str(project / "quasar_lens" / "profiles" / "quasar.json")]) == 0
    capsys.readouterr()

    site = tmp_path / "site"
    copy = pip_install(project, site, tmp_path / "build")
    env = env_with(site, LENS_CACHE_DIR=str(tmp_path / "cache"))

    def lens(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "llm_d_lens.cli", *args], capture_output=True, text=True,
                              env=env, timeout=120)

    listed = lens("hardware", "list", "-o", "json")
    row = next(r for r in json.loads(listed.stdout) if r["id"] == "quasar")
    assert row["origins"] == ["entry point 'quasar' of quasar-lens 0.1.0"] and row["access_modes"] == {"dra": "dra"}
    resolved = lens("hardware", "resolve", "--key", "quasar", "--key", "Quasar-Accelerator", "--device-class",
                    "npu.quasar.example.com", "--label", "llm-d.ai/accelerator-variant=quasar", "--label",
                    "llm-d.ai/accelerator-vendor=quasar", "-o", "json")
    assert [r["id"] for r in json.loads(resolved.stdout)] == ["quasar"] * 4
    doctor = json.loads(lens("hardware", "doctor", "-o", "json").stdout)
    assert next(p for p in doctor["profiles"] if p["id"] == "quasar")["provider"] == "Provider"

    # plain pytest: the contract kit is a pytest11 plugin of Lens, no -p needed
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=copy,
                           capture_output=True, text=True, env=env, timeout=300)
    assert tests.returncode == 0 and "1 passed" in tests.stdout, tests.stdout + tests.stderr


def test_it_never_writes_into_a_directory_in_use(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    code = main(["hardware", "new", "quasar", "--vendor", "quasar", "--resource-name", "quasar.example.com/npu",
                 "--node-label", "quasar.example.com/npu=true", "--dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1 and f"error: SCAFFOLD_REFUSED: --dir {tmp_path}: exists and is not an empty directory" in err
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_flags_that_make_no_valid_profile_are_refused_before_writing(tmp_path, capsys):
    target = tmp_path / "out"
    code = main(["hardware", "new", "quasar", "--vendor", "quasar", "--request-model", "dra",
                 "--node-label", "quasar.example.com/npu=true", "--dir", str(target)])
    assert code == 1 and "--request-model dra needs --device-class" in capsys.readouterr().err
    code = main(["hardware", "new", "Bad_Id", "--vendor", "quasar", "--resource-name", "q.example.com/npu",
                 "--node-label", "q.example.com/npu=true", "--dir", str(target)])
    assert code == 1 and "ID 'Bad_Id': use lower-case letters" in capsys.readouterr().err
    assert not target.exists()


def test_new_then_the_printed_pip_install_then_plain_pytest_passes(tmp_path):
    """The README's three steps exactly: lens hardware new X ..., pip install ./X-lens, pytest X-lens."""
    venv_python = throwaway_venv(tmp_path / "venv")
    env = dict(os.environ, LENS_CACHE_DIR=str(tmp_path / "cache"), PIP_NO_INPUT="1")
    env.pop("PYTHONPATH", None)
    env.pop("PYTEST_ADDOPTS", None)
    new = subprocess.run([str(venv_python), "-m", "llm_d_lens.cli", "hardware", "new", "pulsar", "--vendor", "pulsar",
                          "--resource-name", "pulsar.example.com/npu", "--node-label", "pulsar.example.com/npu=true"],
                         cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert new.returncode == 0, new.stderr
    [hint] = [line for line in new.stdout.splitlines() if line.startswith("next: ")]
    assert hint == "next: pip install ./pulsar-lens && lens hardware show pulsar && pytest ./pulsar-lens"
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv_python), "install", "--quiet", "--no-deps",
                              "--no-build-isolation", "--no-index", "--disable-pip-version-check", "./pulsar-lens"],
                             cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert install.returncode == 0, install.stdout + install.stderr
    assert "would be ignored" not in install.stderr
    tests = subprocess.run([str(venv_python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "pulsar-lens"],
                           cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert tests.returncode == 0 and "1 passed" in tests.stdout, tests.stdout + tests.stderr


def test_the_profile_it_writes_has_a_ui_block(tmp_path, capsys):
    project = tmp_path / "p"
    assert main(["hardware", "new", "quasar", "--vendor", "quasar", "--resource-name", "quasar.example.com/npu",
                 "--node-label", "quasar.example.com/npu=true", "--dir", str(project)]) == 0
    assert "next: pip install " + str(project) + " " in capsys.readouterr().out  # an absolute path stays as given
    profile = json.loads((project / "quasar_lens" / "profiles" / "quasar.json").read_text())
    assert profile["ui"] == {"icon": "Chip", "labels": {"vendor": "Quasar", "metric_group": "NPU"}}


@pytest.mark.parametrize("args,field,owner", [
    (["nvidia", "--vendor", "acme", "--resource-name", "acme.example.com/npu"], "id", "nvidia"),
    (["cuda-clone", "--vendor", "acme", "--resource-name", "nvidia.com/gpu"], "resource prefix", "nvidia"),
    (["acme", "--vendor", "acme", "--request-model", "dra", "--device-class", "gpu.amd.com"], "device class", "amd"),
    (["gpu", "--vendor", "amd", "--resource-name", "acme.example.com/npu"], "upstream overlay directory", "nvidia"),
])
def test_it_refuses_an_identity_a_registered_profile_owns(tmp_path, capsys, args, field, owner):
    target = tmp_path / "out"
    code = main(["hardware", "new", *args, "--node-label", "acme.example.com/npu=true", "--dir", str(target)])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("error: SCAFFOLD_REFUSED: ") and f"{owner!r}" in err
    assert (field == "id" and "is registered already" in err) or err.startswith(f"error: SCAFFOLD_REFUSED: {field} ")
    assert not target.exists()
