"""``deploy render --revision`` says each step on stderr at a terminal, and nothing in a pipe or for programs.

The checkout is a git repository the test builds (today's layout of ``test_revisions``); the render
is the real CLI in a subprocess with real git and ``kubectl kustomize``, its stderr on a pseudo-terminal
(:mod:`llm_d_lens.testing.tty`) or a pipe.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from llm_d_lens.deploy.conftest import needs_kustomize, write_tree
from llm_d_lens.deploy.test_revisions import TODAY, git, needs_git
from llm_d_lens.testing.tty import run_with_terminal_stderr

STEP = "rendering demo for nvidia at revision main"
#: The line is replaced at each step and drawn a few times a second, so which ones a busy machine
#: shows is timing; every one of them is a line only the progress writes.
STEPS = (STEP, "reading revision main of the llm-d source with git", "finding the demo overlay for nvidia",
         "rendering guides/demo/", "fitting the render to access mode plugin")


def shown(stderr: str) -> list[str]:
    return [step for step in STEPS if step in stderr]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    repo = tmp_path / "llm-d"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write_tree(repo, TODAY)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "today")
    return repo


def argv(repo: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "llm_d_lens.cli", "deploy", "render", "--guide", "demo", "--hardware", "nvidia",
            "--overlay", "base", "--mode", "plugin", "--llm-d-root", str(repo), "--revision", "main", *extra]


def environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "LENS_NO_PROGRESS"}


@needs_git
@needs_kustomize
def test_a_terminal_sees_the_render_at_a_revision_and_stdout_holds_only_manifests(checkout: Path) -> None:
    done = run_with_terminal_stderr(argv(checkout), env=environment())
    assert done.returncode == 0, done.stderr
    assert shown(done.stderr)
    assert "\x1b[?25l" in done.stderr  # drawn as a terminal line (the cursor hidden while it runs), then cleared
    assert shown(done.stdout) == [] and "kind: Deployment" in done.stdout
    assert "# rendered with `" in done.stderr  # the explanation still follows


@needs_git
@needs_kustomize
@pytest.mark.parametrize("extra", [("-o", "json"), ("--report", "json")])
def test_output_for_programs_gets_no_progress_even_at_a_terminal(checkout: Path, extra: tuple[str, ...]) -> None:
    done = run_with_terminal_stderr(argv(checkout, *extra), env=environment())
    assert done.returncode == 0, done.stderr
    assert shown(done.stderr) == [] and "\x1b[" not in done.stderr


@needs_git
@needs_kustomize
def test_a_pipe_gets_no_progress(checkout: Path) -> None:
    done = subprocess.run(argv(checkout), capture_output=True, text=True, env=environment(), timeout=120)
    assert done.returncode == 0, done.stderr
    assert shown(done.stderr) == [] and "\x1b[" not in done.stderr
    assert all(line.startswith("# ") for line in done.stderr.splitlines())


@needs_git
@needs_kustomize
def test_each_step_is_heard_in_order_without_changing_the_result(checkout: Path) -> None:
    from llm_d_lens.deploy.service import RenderRequest, render
    from llm_d_lens.runner import CommandRunner

    heard: list[str] = []
    request = RenderRequest(guide="demo", hardware="nvidia", overlay="base", mode="plugin", revision="main")
    quiet = render(request, root=checkout, runner=CommandRunner())
    told = render(request, root=checkout, runner=CommandRunner(), step=heard.append)
    assert [line.split(" ")[0] for line in heard] == ["reading", "finding", "rendering", "fitting"]
    assert heard[0] == "reading revision main of the llm-d source with git"
    assert "guides/demo/modelserver/gpu/vllm/base" in heard[2]
    assert told.objects == quiet.objects
