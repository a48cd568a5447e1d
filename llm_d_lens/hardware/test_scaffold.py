"""``lens hardware new``: what it writes installs with pip, registers, resolves and passes its own tests."""

from __future__ import annotations

import json
import subprocess
import sys

from llm_d_lens.cli.app import main
from llm_d_lens.testing.pip_install import env_with, pip_install


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

    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "llm_d_lens.testing.contract", "-p",
                            "no:cacheprovider", "tests"], cwd=copy, capture_output=True, text=True, env=env, timeout=300)
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
