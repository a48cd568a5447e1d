"""Older llm-d revisions, in a git repository the test builds: each layout upstream had, read as it was.

1. Helm values era: per-hardware ``values_<hw>.yaml`` files and no overlays.
2. Early kustomize era: ``modelserver/tpu-v6/vllm`` and ``modelserver/nvidia-gpu/vllm``, older pins.
3. Today's layout: ``modelserver/tpu/v6/vllm`` and ``modelserver/gpu/vllm/base``, newer pins.

``--revision X`` must reproduce what X pinned, and the Helm era must be one coded error naming its
values files instead of an empty listing.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from llm_d_lens.deploy.conftest import FILES, GPU_LIMITS, needs_kustomize, overlay, write_tree
from llm_d_lens.deploy.errors import HelmValuesLayout
from llm_d_lens.deploy.service import RenderRequest, describe_guides, render
from llm_d_lens.runner import CommandRunner

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
TPU8 = "limits:\n  google.com/tpu: 8\nrequests:\n  google.com/tpu: 8"
RECIPES = {k: v for k, v in FILES.items() if k.startswith("guides/recipes/")}
HELM_ERA = {
    "guides/inference-scheduling/README.md": "helm install ms ... -f ms-inference-scheduling/values_tpu.yaml\n",
    "guides/inference-scheduling/ms-inference-scheduling/values.yaml": "decode:\n  replicas: 1\n",
    "guides/inference-scheduling/ms-inference-scheduling/values_tpu.yaml": "accelerator:\n  type: google\n",
    "guides/inference-scheduling/gaie-inference-scheduling/values.yaml": "inferencePool: {}\n",
}
EARLY_KUSTOMIZE = {
    **RECIPES,
    "guides/demo/modelserver/tpu-v6/vllm/kustomization.yaml": overlay(
        "tpu", "google", up=4, image="vllm/vllm-tpu:v0.11.1", resources=TPU8),
    "guides/demo/modelserver/nvidia-gpu/vllm/kustomization.yaml": overlay(
        "gpu", "nvidia", up=4, image="ghcr.io/llm-d/llm-d-cuda:v0.6.0", resources=GPU_LIMITS),
}
TODAY = {
    **RECIPES,
    "guides/demo/modelserver/tpu/v6/vllm/kustomization.yaml": overlay(
        "tpu", "google", up=5, image="vllm/vllm-tpu:nightly-20260504", resources=TPU8),
    "guides/demo/modelserver/gpu/vllm/base/kustomization.yaml": overlay(
        "gpu", "nvidia", up=5, image="vllm/vllm-openai:v0.19.1", resources=GPU_LIMITS),
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def history(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A checkout whose three commits hold the three layouts; HEAD is today's."""
    repo = tmp_path / "llm-d"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commits = {}
    for name, files in (("helm", HELM_ERA), ("early", EARLY_KUSTOMIZE), ("today", TODAY)):
        for entry in repo.iterdir():
            if entry.name != ".git":
                shutil.rmtree(entry)
        write_tree(repo, files)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", name)
        commits[name] = git(repo, "rev-parse", "HEAD")
    return repo, commits


@needs_git
def test_a_helm_values_revision_is_one_error_naming_its_values_files(history: tuple[Path, dict[str, str]]) -> None:
    repo, commits = history
    for guide in (None, "inference-scheduling"):
        with pytest.raises(HelmValuesLayout) as raised:
            describe_guides(root=repo, revision=commits["helm"], guide=guide, runner=CommandRunner())
        assert raised.value.code == "LLM_D_HELM_VALUES_LAYOUT"
        assert raised.value.details["values_files"] == [
            "guides/inference-scheduling/gaie-inference-scheduling/values.yaml",
            "guides/inference-scheduling/ms-inference-scheduling/values.yaml",
            "guides/inference-scheduling/ms-inference-scheduling/values_tpu.yaml"]
        assert "keeps its per-hardware settings in Helm values files, not in kustomize overlays" in raised.value.message
    with pytest.raises(HelmValuesLayout):
        render(RenderRequest(guide="inference-scheduling", hardware="tpu", revision=commits["helm"]), root=repo,
               runner=CommandRunner())


@needs_git
def test_the_early_kustomize_layout_is_found_by_the_profiles_templates(history: tuple[Path, dict[str, str]]) -> None:
    repo, commits = history
    report = describe_guides(root=repo, revision=commits["early"], guide="demo", runner=CommandRunner())
    found = {(o["hardware"], o["overlay"], o["path"], o["status"]) for o in report["overlays"]}
    assert found == {("google-tpu", "v6", "guides/demo/modelserver/tpu-v6/vllm", "ok"),
                     ("nvidia", ".", "guides/demo/modelserver/nvidia-gpu/vllm", "ok")}
    assert report["unsupported"] == []  # tpu-v6 and nvidia-gpu are owned, not unknown variants


@needs_git
@needs_kustomize
@pytest.mark.parametrize("revision,hardware,overlay_name,image", [
    ("early", "google-tpu", "v6", "vllm/vllm-tpu:v0.11.1"),
    ("early", "nvidia", ".", "ghcr.io/llm-d/llm-d-cuda:v0.6.0"),
    ("today", "google-tpu", "v6", "vllm/vllm-tpu:nightly-20260504"),
    ("today", "nvidia", "base", "vllm/vllm-openai:v0.19.1"),
])
def test_a_revision_renders_what_it_pinned(history: tuple[Path, dict[str, str]], revision: str, hardware: str,
                                           overlay_name: str, image: str) -> None:
    repo, commits = history
    result = render(RenderRequest(guide="demo", hardware=hardware, overlay=overlay_name, revision=commits[revision],
                                  mode="plugin"), root=repo, runner=CommandRunner())
    (row,) = result.fitted.images
    assert (row["action"], row["image"]) == ("kept", image)  # not the profile's runtime_image, older or newer
    assert list(result.fitted.counts.values()) == [8 if hardware == "google-tpu" else 2]
