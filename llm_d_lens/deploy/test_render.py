"""Rendering with the real kustomize (fixture tree) and the whole render job, end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_d_lens.deploy.conftest import ACME, FILES, needs_kustomize, overlay, registry_of, tree_digest, write_tree
from llm_d_lens.deploy.errors import KustomizeNotFound, RenderFailed, ValidationFailed
from llm_d_lens.deploy.render import build, dump_manifests, parse_manifests
from llm_d_lens.deploy.service import RenderRequest, render
from llm_d_lens.deploy.source import LlmdSource
from llm_d_lens.runner import CommandRunner
from llm_d_lens.testing.fake_runner import FakeRunner


def test_no_kustomize_at_all_is_a_clear_error(tree: Path) -> None:
    fake = FakeRunner().missing("kubectl", "kustomize")
    with pytest.raises(KustomizeNotFound) as raised:
        render(RenderRequest(guide="demo", hardware="nvidia"), root=tree, runner=fake)
    assert raised.value.code == "KUSTOMIZE_NOT_FOUND"
    assert "neither `kubectl` (which has kustomize built in) nor `kustomize` is on PATH" in raised.value.message
    assert fake.calls == []


def test_a_standalone_kustomize_is_used_when_kubectl_is_absent(source: LlmdSource) -> None:
    fake = FakeRunner().missing("kubectl")
    fake.reply(["kustomize", "build", ...], stdout="apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\n")
    directory = source.root / "guides/demo/modelserver/gpu/vllm/base"
    text = build(fake, source, directory)
    assert fake.argvs() == [["kustomize", "build", str(directory)]]
    assert parse_manifests(text, "x") == [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}}]


def test_kustomize_errors_are_quoted_with_paths_inside_the_source(source: LlmdSource) -> None:
    fake = FakeRunner()
    stderr = (f'E1130 01:58:20.727620    9608 run.go:72] "command failed" err=<\n\ttrouble configuring builtin '
              f"PatchTransformer with config: `\n\tpath: p.yaml\n\t`: lstat {source.root}/guides/x/p.yaml: no such file\n >\n")
    fake.reply(["kubectl", "kustomize", ...], stderr=stderr, returncode=1)
    with pytest.raises(RenderFailed) as raised:
        build(fake, source, source.root / "guides/x")
    assert raised.value.message == (
        f"kustomize could not render guides/x ({source.origin}): trouble configuring builtin PatchTransformer with config: `\n"
        "path: p.yaml\n`: lstat guides/x/p.yaml: no such file")


def test_kustomize_output_that_is_not_objects_is_refused() -> None:
    with pytest.raises(RenderFailed, match="document 2 is not a Kubernetes object"):
        parse_manifests("kind: A\n---\n- a list\n", "o")
    assert dump_manifests([{"kind": "A", "b": 1}, {"kind": "B"}]) == "b: 1\nkind: A\n---\nkind: B\n"


@needs_kustomize
def test_render_fit_and_validate_with_real_kustomize(tree: Path) -> None:
    before = tree_digest(tree)
    result = render(RenderRequest(guide="demo", hardware="cuda", mode="dra", count=2, pci_allow=["0000:3b:00.0", "86:00.0"]),
                    root=tree, runner=CommandRunner())
    assert tree_digest(tree) == before  # kustomize ran in place and nothing was written there
    kinds = [(o["kind"], o["metadata"]["name"]) for o in result.objects]
    assert kinds == [("ResourceClaimTemplate", "decode-gpu"), ("Deployment", "decode")]
    request = result.objects[0]["spec"]["spec"]["devices"]["requests"][0]
    assert request == {"name": "gpu", "exactly": {
        "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 2,
        "selectors": [{"cel": {"expression":
                               'device.attributes["resource.kubernetes.io"].pciBusID in ["0000:3b:00.0", "0000:86:00.0"]'}}]}}
    container = result.objects[1]["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == {"claims": [{"name": "gpu"}]}
    assert container["image"] == "vllm/vllm-openai:v0.1.0"  # upstream's pin is kept
    assert result.explanation()[-4:] == [
        "access mode dra (dra)",
        "Deployment/decode: requests 2 × gpu.nvidia.com through new ResourceClaimTemplate decode-gpu (--count)",
        "Deployment/decode: tolerates nvidia.com/gpu (NoSchedule)",
        "Deployment/decode: container modelserver: kept image vllm/vllm-openai:v0.1.0 (pinned upstream)",
    ]
    replaced = render(RenderRequest(guide="demo", hardware="cuda", mode="dra", image_policy="profile"), root=tree)
    assert replaced.to_dict()["images"] == [{
        "workload": "Deployment/decode", "container": "modelserver", "upstream": "vllm/vllm-openai:v0.1.0",
        "image": "vllm/vllm-openai:v0.23.0", "action": "replaced", "reason": "--image-policy profile: a repository the profile manages"}]


@needs_kustomize
def test_a_broken_overlay_fails_naming_the_missing_file(tree: Path) -> None:
    with pytest.raises(RenderFailed) as raised:
        render(RenderRequest(guide="demo", hardware="nvidia", overlay="broken"), root=tree, runner=CommandRunner())
    assert "patch-missing.yaml" in raised.value.message
    assert raised.value.message.startswith(f"kustomize could not render guides/demo/modelserver/gpu/vllm/broken ({tree})")


@needs_kustomize
def test_custom_images_are_kept_and_dra_overlays_fit_extended_resources(tree: Path) -> None:
    sglang = render(RenderRequest(guide="demo", hardware="nvidia", model_server="sglang"), root=tree, runner=CommandRunner())
    assert sglang.objects[-1]["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example.com/team/sglang:custom"
    xpu = render(RenderRequest(guide="demo", hardware="xpu", mode="plugin"), root=tree, runner=CommandRunner())
    assert [o["kind"] for o in xpu.objects] == ["Deployment"]  # the overlay's claim template is gone
    assert xpu.objects[0]["spec"]["template"]["spec"]["containers"][0]["resources"] == {
        "limits": {"gpu.intel.com/xe": 1}, "requests": {"gpu.intel.com/xe": 1}}


@needs_kustomize
def test_roles_on_different_hardware_are_refused_before_fitting(tree: Path) -> None:
    prefill = tree / "guides/demo/modelserver/gpu/vllm/hetero"
    write_tree(prefill, {
        "kustomization.yaml": "resources:\n  - ../base\n  - prefill.yaml\n",
        "prefill.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: prefill\nspec:\n  template:\n"
                        "    metadata:\n      labels:\n        llm-d.ai/role: prefill\n    spec:\n      containers:\n"
                        "        - name: m\n          image: x\n          resources:\n            limits:\n"
                        "              amd.com/gpu: 1\n",
    })
    with pytest.raises(ValidationFailed) as raised:
        render(RenderRequest(guide="demo", hardware="nvidia", overlay="hetero"), root=tree, runner=CommandRunner())
    assert "role decode asks for nvidia (nvidia.com/gpu); role prefill asks for amd (amd.com/gpu)" in raised.value.message


@needs_kustomize
def test_a_new_hardware_renders_from_its_profile_alone(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", {
        **{k: v for k, v in FILES.items() if k.startswith("guides/recipes/")},
        "guides/g1/modelserver/acc/vllm/kustomization.yaml": overlay(
            "acc", "acme", up=4, image="registry.acme.example/serve:1.0",
            resources="limits:\n  acme.example/npu: 4\nrequests:\n  acme.example/npu: 4"),
    })
    result = render(RenderRequest(guide="g1", hardware="acme-npu", image_policy="profile"), root=root, runner=CommandRunner(),
                    registry=registry_of(ACME))
    template = result.objects[0]
    assert template["spec"]["spec"]["devices"]["requests"] == [
        {"name": "npu", "exactly": {"deviceClassName": "npu.acme.example", "allocationMode": "ExactCount", "count": 4}}]
    pod = result.objects[1]["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "registry.acme.example/serve:2.0"
    assert pod["nodeSelector"] == {"acme.example/npu.present": "true"}


@needs_kustomize
def test_the_guide_is_read_while_kustomize_runs(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kustomize is another process: the guide's router and companions are read beside it, not after."""
    import threading

    from llm_d_lens.deploy import service

    started, guide_read = threading.Event(), threading.Event()

    class GatedRunner(CommandRunner):
        def _execute(self, call, executable):  # type: ignore[no-untyped-def]
            if "kustomize" in call.argv:
                started.set()
                assert guide_read.wait(20), "kustomize waited for the guide to be read: they ran one after the other"
            return super()._execute(call, executable)

    read_guide = service._whole_guide

    def whole_guide_while_kustomize_runs(*args):  # type: ignore[no-untyped-def]
        assert started.wait(20), "the guide was read before kustomize started"
        guide_read.set()
        return read_guide(*args)

    monkeypatch.setattr(service, "_whole_guide", whole_guide_while_kustomize_runs)
    result = render(RenderRequest(guide="demo", hardware="cuda"), root=tree, runner=GatedRunner())
    assert started.is_set() and guide_read.is_set()
    assert [o["kind"] for o in result.objects].count("Deployment") >= 1


def test_a_failing_guide_read_waits_for_kustomize_before_the_source_goes(source: LlmdSource) -> None:
    """Leaving the render early (here: the guide could not be read) still waits for kustomize, so a
    temporary source (``--revision``) is never removed under it; its own failure is raised on the caller."""
    import threading
    import time

    from llm_d_lens.deploy.render import Build

    finished = threading.Event()

    class SlowFake(FakeRunner):
        def _execute(self, call, executable):  # type: ignore[no-untyped-def]
            time.sleep(0.2)
            finished.set()
            return super()._execute(call, executable)

    fake = SlowFake()
    fake.reply(["kubectl", "kustomize", ...], stderr="Error: no kustomization here\n", returncode=1)
    with pytest.raises(KeyError), Build(fake, source, source.root / "guides/x") as kustomize:
        raise KeyError("the guide")
    assert finished.is_set()  # the with block ended only once kustomize had
    with pytest.raises(RenderFailed, match=r"kustomize could not render guides/x .*: no kustomization here"), \
            Build(fake, source, source.root / "guides/x") as kustomize:
        kustomize.output()
