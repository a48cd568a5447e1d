"""Reading Kustomizations statically: inherited labels, missing files, references out of the source."""

from __future__ import annotations

from pathlib import Path

from llm_d_lens.deploy.conftest import write_tree
from llm_d_lens.deploy.kustomization import KustomizationReader
from llm_d_lens.deploy.source import LlmdSource


def test_an_overlay_inherits_the_labels_of_its_local_base(source: LlmdSource) -> None:
    reader = KustomizationReader(source)
    gke = reader.inspect(source.root / "guides/demo/modelserver/gpu/vllm/gke")
    assert gke.kind == "Kustomization"
    assert gke.accelerator_labels == ("gpu", "nvidia")
    assert gke.labels["llm-d.ai/guide"] == "demo"
    assert gke.problems == ()


def test_a_missing_patch_file_is_named_with_its_field(source: LlmdSource) -> None:
    inspection = KustomizationReader(source).inspect(source.root / "guides/demo/modelserver/gpu/vllm/broken")
    assert [(p.kind, p.file, p.field, p.value) for p in inspection.problems] == [
        ("missing", "guides/demo/modelserver/gpu/vllm/broken/kustomization.yaml", "patches[0].path", "patch-missing.yaml")
    ]
    assert "guides/demo/modelserver/gpu/vllm/broken/patch-missing.yaml" in str(inspection.problems[0])
    assert inspection.accelerator_labels == ("gpu", "nvidia")  # still read through ../base


def test_references_out_of_the_source_are_problems(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", {
        "o/kustomization.yaml": "resources:\n  - ../../outside\n  - /etc/hosts\n  - https://github.com/x/y//z?ref=v1\n",
    })
    write_tree(tmp_path, {"outside/kustomization.yaml": "resources: []\n"})
    source = LlmdSource(root.resolve(), str(root))
    problems = KustomizationReader(source).inspect(source.root / "o").problems
    assert [(p.kind, p.field, p.value) for p in problems] == [
        ("escapes", "resources[0]", "../../outside"),
        ("escapes", "resources[1]", "/etc/hosts"),
    ]  # the remote base is kustomize's business, not a local file


def test_unreadable_and_ambiguous_kustomizations(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", {
        "bad/kustomization.yaml": "resources: [\n",
        "two/kustomization.yaml": "resources: []\n",
        "two/Kustomization": "resources: []\n",
        "list/kustomization.yaml": "- a\n",
        "uses-empty/kustomization.yaml": "resources:\n  - ../empty\n",
        "empty/readme.txt": "no kustomization here",
    })
    source = LlmdSource(root.resolve(), str(root))
    reader = KustomizationReader(source)
    assert [p.message for p in reader.inspect(source.root / "bad").problems] == ["is not valid YAML at line 2 column 1"]
    assert [p.kind for p in reader.inspect(source.root / "two").problems] == ["ambiguous"]
    assert [p.message for p in reader.inspect(source.root / "list").problems] == ["is not a YAML mapping"]
    problems = reader.inspect(source.root / "uses-empty").problems
    assert [(p.kind, p.file) for p in problems] == [("missing", "empty")]
    assert "holds none of kustomization.yaml" in problems[0].message


def test_components_are_recognised(source: LlmdSource) -> None:
    inspection = KustomizationReader(source).inspect(source.root / "guides/demo/modelserver/components/extra")
    assert inspection.kind == "Component"
