"""The llm-d source: names that cannot escape it, the root from the environment, git revisions."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from llm_d_lens.deploy.conftest import FILES, tree_digest, write_tree
from llm_d_lens.deploy.discovery import discover
from llm_d_lens.deploy.errors import SourceInvalid, SourceNotFound, UnsafeName
from llm_d_lens.deploy.source import check_name, open_source
from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.runner import CommandRunner


@pytest.mark.parametrize("value", ["..", "../etc", "/etc", "a/../b", "a//b", "", " x", "a\\b", "./a", "a\0b", "*", "{variant}"])
def test_names_that_could_leave_the_source_are_refused(value: str) -> None:
    with pytest.raises(UnsafeName) as raised:
        check_name("guide", value, nested=True)
    assert raised.value.code == "DEPLOY_UNSAFE_PATH"
    assert repr(value) in raised.value.message


def test_a_single_level_name_may_not_hold_a_slash() -> None:
    with pytest.raises(UnsafeName, match="single directory name"):
        check_name("model server", "vllm/base")
    assert check_name("guide", "multimodal-serving/aggregation", nested=True) == "multimodal-serving/aggregation"


def test_the_root_comes_from_the_environment_when_not_given(tree: Path) -> None:
    with open_source(None, env={"LLM_D_ROOT": str(tree)}) as source:
        assert source.root == tree.resolve()
    with pytest.raises(SourceNotFound, match="pass --llm-d-root or set LLM_D_ROOT"):
        with open_source(None, env={}):
            pass
    with pytest.raises(SourceNotFound, match="is not a directory"):
        with open_source(tree / "nope", env={}):
            pass


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@needs_git
def test_a_revision_is_read_from_git_without_touching_the_checkout(tree: Path) -> None:
    git(tree, "init", "-q")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "with amd")
    first = git(tree, "rev-parse", "HEAD")
    shutil.rmtree(tree / "guides/demo/modelserver/amd")
    git(tree, "commit", "-q", "-am", "remove amd")
    (tree / "untracked.txt").write_text("mine")
    before = tree_digest(tree)
    status = git(tree, "status", "--porcelain")
    with open_source(tree, "HEAD~1", runner=CommandRunner()) as source:
        assert source.commit == first
        assert source.root != tree.resolve()
        assert source.describe() == f"{tree} at HEAD~1 (commit {first[:12]})"
        at_revision = {o.hardware for o in discover(source, get_registry(), guide="demo").overlays}
        private = source.root
    assert "amd" in at_revision
    assert not private.exists()  # the private copy is gone
    with open_source(tree) as source:
        assert "amd" not in {o.hardware for o in discover(source, get_registry(), guide="demo").overlays}
    assert tree_digest(tree) == before
    assert git(tree, "status", "--porcelain") == status


@needs_git
def test_a_revision_of_a_subdirectory_reads_that_subdirectory(tmp_path: Path) -> None:
    repo = tmp_path / "mono"
    write_tree(repo / "vendor/llm-d", FILES)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "x")
    with open_source(repo / "vendor/llm-d", "HEAD", runner=CommandRunner()) as source:
        assert (source.root / "guides/demo/modelserver/xpu/vllm/kustomization.yaml").is_file()


@needs_git
def test_unknown_revisions_and_non_repositories_are_clear_errors(tree: Path) -> None:
    with pytest.raises(SourceInvalid, match="not a git repository"):
        with open_source(tree, "main", runner=CommandRunner()):
            pass
    git(tree, "init", "-q")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "x")
    with pytest.raises(SourceInvalid, match="no commit named 'v9.9.9'"):
        with open_source(tree, "v9.9.9", runner=CommandRunner()):
            pass
    with pytest.raises(SourceInvalid, match="is not a git revision"):
        with open_source(tree, "--output=/tmp/x", runner=CommandRunner()):
            pass


@needs_git
def test_a_branch_only_a_remote_has_is_found_there(tree: Path, tmp_path: Path) -> None:
    git(tree, "init", "-q", "-b", "main")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "x")
    upstream_commit = git(tree, "rev-parse", "HEAD")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(tree), str(clone)], check=True, capture_output=True)
    git(clone, "checkout", "-q", "--detach")
    git(clone, "branch", "-q", "-D", "main")  # like a clone that only has origin/main
    assert subprocess.run(["git", "-C", str(clone), "rev-parse", "--verify", "--quiet", "main"],
                          capture_output=True).returncode != 0
    with open_source(clone, "main", runner=CommandRunner()) as source:
        assert source.commit == upstream_commit


@needs_git
def test_a_shallow_clone_that_lacks_the_revision_says_so(tree: Path, tmp_path: Path) -> None:
    git(tree, "init", "-q", "-b", "main")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "first")
    first = git(tree, "rev-parse", "HEAD")
    (tree / "later.txt").write_text("x")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "second")
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{tree}", str(clone)], check=True, capture_output=True)
    with pytest.raises(SourceInvalid) as raised:
        with open_source(clone, first, runner=CommandRunner()):
            pass
    assert f"no commit named {first!r}" in raised.value.message
    assert "is a shallow clone, which may lack it: `git -C" in raised.value.message
    assert raised.value.details["shallow"] is True
