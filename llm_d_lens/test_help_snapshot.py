"""The shipped ``lens --help`` is what the Typer app prints, and is used only where it is that.

Real processes throughout: the recorded text is compared with a fresh run of the full command
(``cli.main(argv)``, which never takes a fast path), and whether a run was served from the file
is read from what it imported (``-X importtime``: no Typer).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llm_d_lens import help_snapshot

FULL = "import sys\nfrom llm_d_lens.cli import main\nraise SystemExit(main(sys.argv[1:]))\n"
ORIGINAL = Path(help_snapshot.PACKAGE)
SCRIPT = "from llm_d_lens.lifetime import console\nconsole()\n"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in help_snapshot.SHAPERS and k != "PYTHONPATH"}
    env.update(LENS_CACHE_DIR=str(tmp_path / "cache"), LENS_RESULT_CACHE="0", **extra)
    return env


def _run(code: str, args: list[str], env: dict[str, str], *, imports: bool = False) -> tuple[int, str, str]:
    argv = [sys.executable, "-P", *(["-X", "importtime"] if imports else []), "-c", code, *args]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    return done.returncode, done.stdout, done.stderr


def _typer_imported(args: list[str], env: dict[str, str]) -> bool:
    stderr = _run(SCRIPT, args, env, imports=True)[2]
    imported = {line.split("|")[-1].strip() for line in stderr.splitlines() if line.startswith("import time:")}
    assert "llm_d_lens.cli" in imported
    return "typer" in imported


@pytest.mark.parametrize("args", help_snapshot.HELP, ids=" ".join)
def test_a_pipe_gets_the_shipped_help_and_it_is_the_commands_own(args, tmp_path):
    env = _env(tmp_path)
    assert _run(SCRIPT, args, env) == _run(FULL, args, env)
    assert "hardware" in _run(SCRIPT, args, env)[1]
    assert not _typer_imported(args, env)


@pytest.mark.parametrize("extra", [{"COLUMNS": "120"}, {"FORCE_COLOR": "1"}, {"TERMINAL_WIDTH": "100"},
                                   {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}], ids=lambda e: ",".join(e))
def test_another_shape_runs_the_command(extra, tmp_path):
    env = _env(tmp_path, **extra)
    assert _run(SCRIPT, ["--help"], env) == _run(FULL, ["--help"], env)
    assert _typer_imported(["--help"], env)


def _stdout() -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8")


def test_a_changed_command_table_or_layout_tool_is_not_answered_from_the_file(tmp_path, monkeypatch):
    stored = json.loads(Path(help_snapshot.SNAPSHOT).read_text())
    package = tmp_path / "llm_d_lens"
    for rel in stored["inputs"]:
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(help_snapshot.PACKAGE) / rel, package / rel)
    monkeypatch.setattr(help_snapshot, "PACKAGE", str(package))
    monkeypatch.setattr(sys, "stdout", _stdout())
    monkeypatch.setattr(sys, "stderr", _stdout())
    assert help_snapshot.replay(["--help"], {}) == stored["code"]
    assert help_snapshot.replay(["--help", "x"], {}) is None
    assert help_snapshot.replay(["--help"], {"COLUMNS": "100"}) is None
    cli = package / "cli.py"
    cli.write_text(cli.read_text().replace('"plan": (', '"plans": ('))  # a group renamed
    assert help_snapshot.replay(["--help"], {}) is None
    shutil.copyfile(ORIGINAL / "cli.py", cli)
    assert help_snapshot.replay(["--help"], {}) == stored["code"]
    monkeypatch.setattr(help_snapshot, "_tool_folders", lambda path: ["rich-99.0.0.dist-info", "typer-0.29.2.dist-info"])
    assert help_snapshot.replay(["--help"], {}) is None  # another Rich lays it out


def test_shell_completion_and_terminals_are_never_answered_from_the_file():
    tty = _stdout()
    tty.isatty = lambda: True  # type: ignore[method-assign]
    assert not help_snapshot.shaped_as_recorded({}, tty)
    assert not help_snapshot.shaped_as_recorded({"_LENS_COMPLETE": "bash_complete"}, _stdout())
    assert not help_snapshot.shaped_as_recorded({}, io.TextIOWrapper(io.BytesIO(), encoding="latin-1"))
    assert help_snapshot.shaped_as_recorded({"LANG": "C.UTF-8"}, _stdout())
