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
    code = main(["hardware", "new", "quasar\n", "--vendor", "quasar", "--resource-name", "q.example.com/npu",
                 "--node-label", "q.example.com/npu=true", "--dir", str(target)])
    assert code == 1 and "ID 'quasar\\n': use lower-case letters" in capsys.readouterr().err  # not a folder named so
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


# -- the safe writer: no symlink followed, all or nothing, a coded error on a disk that refuses ---------

NEW = ["hardware", "new", "quasar", "--vendor", "quasar", "--resource-name", "quasar.example.com/npu",
       "--node-label", "quasar.example.com/npu=true"]


def _plant_after_check(monkeypatch, plant):
    """The race, made certain: the attacker's move lands right after the emptiness check passed."""
    from llm_d_lens.hardware import scaffold

    checked = scaffold.check

    def check_then_plant(req):
        checked(req)
        plant(req.directory)
    monkeypatch.setattr(scaffold, "check", check_then_plant)


@pytest.mark.parametrize("where", ["an empty --dir", "a --dir created meanwhile"])
def test_a_symlink_planted_while_it_writes_is_never_followed_and_nothing_is_left(tmp_path, capsys, monkeypatch, where):
    """It wrote with Path.write_text into the folder it had checked: a planted README.md -> victim overwrote the victim."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    target = tmp_path / "quasar-lens"
    if where == "an empty --dir":
        target.mkdir()

    def plant(directory):
        directory.mkdir(exist_ok=True)
        (directory / "README.md").symlink_to(victim)
        (directory / "tests").symlink_to(tmp_path)
    _plant_after_check(monkeypatch, plant)
    code = main([*NEW, "--dir", str(target)])
    err = capsys.readouterr().err
    assert code == 1 and f"error: SCAFFOLD_REFUSED: --dir {target}: " in err and "nothing was written" in err, err
    assert victim.read_text() == "precious" and not (tmp_path / "test_contract.py").exists()
    assert sorted(p.name for p in target.iterdir()) == ["README.md", "tests"]  # the attacker's, untouched; none of ours
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quasar-lens", "victim.txt"]  # no partial folder


def test_a_dir_that_is_a_symlink_is_refused(tmp_path, capsys):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert main([*NEW, "--dir", str(tmp_path / "link")]) == 1
    assert "--dir " + str(tmp_path / "link") + ": is a symlink" in capsys.readouterr().err
    assert list(real.iterdir()) == []


def test_a_full_disk_is_a_coded_error_and_no_half_package_is_left(tmp_path):
    """A file-size limit (what a full disk does to a write: it stops short) on the real CLI process."""
    import resource
    import signal

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))

    for target in (tmp_path / "quasar-lens", tmp_path / "empty"):
        if target.name == "empty":
            target.mkdir()
        done = subprocess.run([sys.executable, "-m", "llm_d_lens.cli", *NEW, "--dir", str(target)], capture_output=True,
                              text=True, preexec_fn=limited, timeout=120)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert f"error: SCAFFOLD_REFUSED: --dir {target}: cannot be written (File too large)" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"] and list((tmp_path / "empty").iterdir()) == []


def test_a_read_only_disk_is_a_coded_error(tmp_path, capsys):
    mount = tmp_path / "ro"
    mount.mkdir()
    if os.geteuid() == 0:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,ro", "tmpfs", str(mount)], capture_output=True)
        if mounted.returncode != 0:
            pytest.skip(f"cannot mount a read-only tmpfs here: {mounted.stderr.decode().strip()}")
    else:
        mount.chmod(0o555)
    try:
        assert main([*NEW, "--dir", str(mount / "quasar-lens")]) == 1
        err = capsys.readouterr().err
        assert f"error: SCAFFOLD_REFUSED: --dir {mount / 'quasar-lens'}: cannot be written (" in err
        assert "Read-only file system" in err or "Permission denied" in err
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", str(mount)], check=True)
        else:
            mount.chmod(0o755)
    assert list(mount.iterdir()) == []
