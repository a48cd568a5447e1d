"""``lens plan`` says what it is doing on stderr at a terminal, and nothing for ``-o json`` or in a pipe.

The real CLI in a subprocess, on the embedded demo cluster, its stderr on a pseudo-terminal
(:mod:`llm_d_lens.testing.tty`) or a pipe.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.planning.cli import _planning_step
from llm_d_lens.testing.tty import run_with_terminal_stderr

ARGV = [sys.executable, "-m", "llm_d_lens.cli", "plan", "--demo", "--model", "qwen2.5-7b", "--no-predict"]
STEP = "planning qwen2.5-7b: fitting the model to the demo cluster"


def environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "LENS_NO_PROGRESS"}


def test_a_terminal_sees_what_planning_does_and_the_table_stays_on_stdout():
    done = run_with_terminal_stderr(ARGV, env=environment())
    assert done.returncode == 0, done.stderr
    assert STEP in done.stderr and "\x1b[" in done.stderr
    assert STEP not in done.stdout and "Qwen/Qwen2.5-7B-Instruct" in done.stdout


@pytest.mark.parametrize("where", ["json at a terminal", "pipe"])
def test_json_and_pipes_get_no_progress(where):
    if where == "pipe":
        done = subprocess.run(ARGV, capture_output=True, text=True, env=environment(), timeout=120)
    else:
        done = run_with_terminal_stderr([*ARGV, "-o", "json"], env=environment())
    assert done.returncode == 0, done.stderr
    assert STEP not in done.stderr and "\x1b[" not in done.stderr
    if where != "pipe":
        assert json.loads(done.stdout)["model"]


def test_the_line_names_what_is_read():
    assert _planning_step(ClusterSource(context="prod"), False) == \
        "reading nodes, pods and DRA objects with kubectl (context prod)"
    assert _planning_step(ClusterSource(), True).endswith("(context current) and running the profiles' discovery "
                                                         "tools on its nodes")
    assert _planning_step(ClusterSource(demo=True), False) == "fitting the model to the demo cluster"
