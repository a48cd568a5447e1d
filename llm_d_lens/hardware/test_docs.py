"""docs/add-hardware.md works as written: its files are built into a package, pip-installed, and
its commands run.

Blocks are marked in the Markdown: ``<!-- file: PATH -->`` before a block writes it to PATH
(``<!-- append: PATH -->`` adds it to the end),
``<!-- run -->`` runs each command of the block (``lens`` and ``python`` are this interpreter's),
``<!-- install: DIR -->`` stands for ``pip install ./DIR``, done into a throwaway place with
``--target`` so the test environment stays as it is. An unmarked code block is not allowed,
except ``text`` (an interface listing, not something to run).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from llm_d_lens.testing.pip_install import env_with, pip_install

DOC = Path(__file__).resolve().parents[2] / "docs" / "add-hardware.md"
BLOCK = re.compile(r"(?:<!-- (?P<mark>[^>]*?) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)```", re.S)


def blocks() -> list[tuple[str | None, str, str]]:
    return [(m["mark"], m["lang"], m["body"]) for m in BLOCK.finditer(DOC.read_text(encoding="utf-8"))]


def commands(body: str) -> list[list[str]]:
    joined = body.replace("\\\n", " ")
    out = []
    for line in joined.splitlines():
        argv = shlex.split(line)
        if not argv:
            continue
        if argv[0] == "lens":
            argv = [sys.executable, "-m", "llm_d_lens.cli", *argv[1:]]
        elif argv[0] == "python":
            argv = [sys.executable, *argv[1:]]
        out.append(argv)
    return out


def test_every_code_block_is_marked_as_a_file_a_command_or_an_install():
    unmarked = [(lang, body[:40]) for mark, lang, body in blocks() if mark is None and lang != "text"]
    assert unmarked == []


def test_the_guide_builds_installs_and_runs_as_written(tmp_path):
    site, work = tmp_path / "site", tmp_path / "work"
    work.mkdir()
    env = env_with(site, LENS_CACHE_DIR=str(tmp_path / "cache"))
    ran = []
    for mark, lang, body in blocks():
        if mark is None:
            continue
        kind, _, argument = mark.partition(":")
        if kind == "file":
            path = work / argument.strip()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
        elif kind == "append":
            with (work / argument.strip()).open("a", encoding="utf-8") as handle:
                handle.write(body)
        elif kind == "install":
            pip_install(work / argument.strip(), site, tmp_path / "build")
        elif kind == "run":
            for argv in commands(body):
                result = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=300)
                assert result.returncode == 0, f"{shlex.join(argv)}:\n{result.stdout}\n{result.stderr}"
                assert "warning:" not in result.stderr, result.stderr
                ran.append(" ".join(argv[3:5]) if argv[1:3] == ["-m", "llm_d_lens.cli"] else " ".join(argv[1:3]))
        else:
            raise AssertionError(f"unknown block mark {mark!r}")
    # the guide's own plugin is what the commands saw: shown, resolved, doctored and contract-checked
    assert ran == ["hardware new", "hardware validate", "hardware show", "hardware resolve", "hardware doctor",
                   "hardware doctor", "-m pytest"]
    shown = subprocess.run([sys.executable, "-m", "llm_d_lens.cli", "hardware", "show", "acme-npu", "-o", "json"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert '"id": "acme"' in shown.stdout
    doctor = subprocess.run([sys.executable, "-m", "llm_d_lens.cli", "hardware", "doctor", "-o", "json"],
                            cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert '"provider": "AcmeProvider"' in doctor.stdout  # the reinstall picked up section 4's provider
    assert (work / "quasar-lens" / "pyproject.toml").is_file()  # the scaffold command ran too
