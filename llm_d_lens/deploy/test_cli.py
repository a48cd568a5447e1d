"""``lens deploy`` through the real entry point: output, files, errors, and apply through the runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from llm_d_lens.cli.app import main
from llm_d_lens.deploy import cli as deploy_cli
from llm_d_lens.deploy.conftest import needs_kustomize
from llm_d_lens.testing.fake_runner import FakeRunner

RENDERED = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  labels:
    llm-d.ai/accelerator-variant: gpu
    llm-d.ai/accelerator-vendor: nvidia
  name: decode
spec:
  template:
    metadata:
      labels:
        llm-d.ai/accelerator-variant: gpu
        llm-d.ai/accelerator-vendor: nvidia
    spec:
      containers:
      - image: vllm/vllm-openai:v0.23.0
        name: modelserver
        resources:
          limits:
            nvidia.com/gpu: 2
          requests:
            nvidia.com/gpu: 2
"""


def test_guides_lists_overlays_and_unsupported_directories(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["deploy", "guides", "--llm-d-root", str(tree), "--guide", "demo", "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["guides"] == ["demo"]
    assert {(o["hardware"], o["model_server"], o["overlay"], o["status"]) for o in report["overlays"]} == {
        ("amd", "vllm", ".", "ok"), ("nvidia", "sglang", ".", "ok"), ("nvidia", "vllm", "base", "ok"),
        ("nvidia", "vllm", "gke", "ok"), ("nvidia", "vllm", "broken", "broken"), ("intel-xpu", "vllm", ".", "ok"),
        ("google-tpu", "vllm", "v6", "ok"), ("google-tpu", "vllm", "v7", "ok"), ("google-tpu", "vllm", "base", "unlabelled"),
    }
    # npu is labelled but owned by no profile; components/ holds only a Component and is not hardware
    assert report["unsupported"] == [{
        "guide": "demo", "variant_dir": "npu", "path": "guides/demo/modelserver/npu",
        "overlays": ["guides/demo/modelserver/npu/vllm"], "labels": ["npu/rebellions"],
        "detail": "no registered profile has upstream_variant 'npu'"}]


def test_guides_of_a_guide_the_source_lacks_is_an_error_naming_the_guides_there(tree: Path,
                                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["deploy", "guides", "--llm-d-root", str(tree), "--guide", "dmeo", "-o", "json"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"error: GUIDE_NOT_FOUND: guide 'dmeo' has no overlays in llm-d source {tree}; guides there: demo, flat-tpu, serving/multimodal\n"
    # a guide that exists but has no overlay for the hardware asked for is an empty listing, not an error
    assert main(["deploy", "guides", "--llm-d-root", str(tree), "--guide", "demo", "--hardware", "gaudi", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["overlays"] == []


def test_guides_table_names_the_broken_file(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["deploy", "guides", "--llm-d-root", str(tree), "--hardware", "nvidia"]) == 0
    out = capsys.readouterr().out
    assert "patches[0].path: patch-missing.yaml does not exist" in out
    assert "unsupported" not in out  # a hardware filter lists only that hardware


def test_errors_exit_1_with_one_line_and_no_traceback(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["deploy", "render", "--llm-d-root", str(tree), "--guide", "demo", "--hardware", "gaudi"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: OVERLAY_NOT_FOUND: no overlay for intel-gaudi in this llm-d source (guide demo)")
    assert "Traceback" not in err
    assert main(["deploy", "render", "--llm-d-root", str(tree), "--guide", "../x", "--hardware", "nvidia"]) == 1
    assert "DEPLOY_UNSAFE_PATH" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["missing-dir/out.yaml", "a-directory"])
def test_render_to_a_path_it_cannot_write_is_one_error_line_before_rendering(where: str, tree: Path, tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a-directory").mkdir()
    target = tmp_path / where
    for extra in ([], ["--force"]):
        args = ["deploy", "render", "--llm-d-root", str(tree), "--guide", "demo", "--hardware", "tpu", "--overlay", "v7",
                "--output-file", str(target), *extra]
        assert main(args) == 1
        err = capsys.readouterr().err
        assert "Traceback" not in err
        assert err.startswith(f"error: OUTPUT_INVALID: {target}: ")
        assert "# llm-d source" not in err  # refused before any rendering
    assert (tmp_path / "a-directory").is_dir() and not (tmp_path / "missing-dir").exists()


@needs_kustomize
def test_render_report_goes_to_the_output_file_when_one_is_given(tree: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "report.json"
    args = ["deploy", "render", "--llm-d-root", str(tree), "--guide", "demo", "--hardware", "rocm", "--report", "json",
            "--output-file", str(target)]
    assert main(args) == 0
    assert capsys.readouterr().out == ""
    report = json.loads(target.read_text())
    assert (report["hardware"], report["mode"]) == ("amd", "plugin")
    target.write_text("mine")
    assert main(args) == 1
    assert target.read_text() == "mine"


@needs_kustomize
def test_render_writes_a_file_and_never_overwrites_one_unasked(tree: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out.yaml"
    args = ["deploy", "render", "--llm-d-root", str(tree), "--guide", "demo", "--hardware", "tpu", "--overlay", "v7", "--output-file", str(target)]
    assert main(args) == 0
    objects = list(yaml.safe_load_all(target.read_text()))
    assert objects[0]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"google.com/tpu": 4}
    err = capsys.readouterr().err
    assert "# overlay 'v7' as asked (of base, v6, v7)" in err
    target.write_text("mine")
    assert main(args) == 1
    assert "out.yaml exists; pass --force to overwrite it" in capsys.readouterr().err
    assert target.read_text() == "mine"
    assert main([*args, "--force"]) == 0
    assert target.read_text().startswith("apiVersion: apps/v1")


@needs_kustomize
def test_render_report_is_json(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["deploy", "render", "--llm-d-root", str(tree), "--guide", "demo", "--hardware", "rocm", "--report", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["hardware"], report["mode"], report["request_model"]) == ("amd", "plugin", "extended-resource")
    assert report["overlay"]["path"] == "guides/demo/modelserver/amd/vllm"
    assert report["counts"] == {"Deployment/decode": 1}


def fake_cluster(monkeypatch: pytest.MonkeyPatch) -> FakeRunner:
    fake = FakeRunner()
    fake.reply(["kubectl", "kustomize", ...], stdout=RENDERED)
    fake.reply(["kubectl", "apply", ...], stdout="deployment.apps/decode created (server dry run)\n")
    monkeypatch.setattr(deploy_cli, "_runner", lambda kubeconfig, context: fake)
    return fake


def test_apply_is_a_server_side_dry_run_unless_yes(tree: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    fake = fake_cluster(monkeypatch)
    assert main(["deploy", "apply", "--llm-d-root", str(tree), "--guide", "demo", "--hardware", "nvidia", "-n", "llm-d"]) == 0
    apply_call = fake.calls[-1]
    assert list(apply_call.argv) == ["kubectl", "apply", "-f", "-", "--namespace", "llm-d", "--dry-run=server"]
    sent = list(yaml.safe_load_all(apply_call.input or ""))
    assert sent[0]["spec"]["template"]["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    out = capsys.readouterr()
    assert out.out == "deployment.apps/decode created (server dry run)\n"
    assert "server-side dry run only; pass --yes to apply" in out.err
    assert main(["deploy", "apply", "--llm-d-root", str(tree), "--guide", "demo", "--hardware", "nvidia", "--yes"]) == 0
    assert list(fake.calls[-1].argv) == ["kubectl", "apply", "-f", "-"]


def test_runtime_classes_are_read_from_the_cluster_when_asked(tree: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    fake = fake_cluster(monkeypatch)
    fake.reply(["kubectl", "get", "runtimeclasses.node.k8s.io", "-o", "json"], json_body={"items": [
        {"metadata": {"name": "runc"}, "handler": "runc"}, {"metadata": {"name": "nvidia"}, "handler": "nvidia"}]})
    assert main(["deploy", "render", "--llm-d-root", str(tree), "--guide", "demo", "--hardware", "nvidia",
                 "--runtime-classes-from-cluster"]) == 0
    rendered = list(yaml.safe_load_all(capsys.readouterr().out))
    assert rendered[0]["spec"]["template"]["spec"]["runtimeClassName"] == "nvidia"


def test_pci_addresses_may_be_comma_separated(tree: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    fake_cluster(monkeypatch)
    assert main(["deploy", "render", "--llm-d-root", str(tree), "--guide", "demo", "--hardware", "nvidia", "--mode", "dra",
                 "--pci-allow", "0000:3b:00.0,86:00.0", "--pci-allow", "0000:af:00.0"]) == 0
    template = next(o for o in yaml.safe_load_all(capsys.readouterr().out) if o["kind"] == "ResourceClaimTemplate")
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] == [{"cel": {"expression":
        'device.attributes["resource.kubernetes.io"].pciBusID in ["0000:3b:00.0", "0000:86:00.0", "0000:af:00.0"]'}}]


@pytest.mark.parametrize("value", ["", "0000:3b:00.0,", " "])
def test_an_empty_pci_address_is_a_usage_error_not_a_dropped_allowlist(tree: Path, monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str], value: str) -> None:
    fake_cluster(monkeypatch)
    code = main(["deploy", "render", "--llm-d-root", str(tree), "--guide", "demo", "--hardware", "nvidia", "--mode", "dra",
                 "--pci-allow", value])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert "an empty PCI address" in captured.err


@pytest.mark.parametrize(("flag", "value", "shown"), [
    ("--model", "a b", "'a b'"), ("--model", "x;rm -rf /", "'x;rm -rf /'"), ("--model", "m" * 257, repr("m" * 257)),
    ("--model", "org/m\n", "'org/m\\n'"),  # a trailing newline: the whole value must be a name, not a line of one
    ("--max-model-len", "10000001", "10000001"), ("--guide", "", "''")])
def test_a_render_option_out_of_its_form_is_one_coded_line_and_nothing_runs(
        tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], flag: str, value: str,
        shown: str) -> None:
    fake = fake_cluster(monkeypatch)
    args = {"--guide": "demo", "--hardware": "nvidia", flag: value}
    code = main(["deploy", "render", "--llm-d-root", str(tree), *(part for item in args.items() for part in item)])
    captured = capsys.readouterr()
    assert code == 1 and captured.out == "" and fake.calls == []
    assert captured.err.startswith(f"error: DEPLOY_REQUEST_INVALID: {flag} {shown} ")
    assert "Traceback" not in captured.err and len(captured.err.splitlines()) == 1


def test_an_absurd_count_is_a_usage_error(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["deploy", "render", "--llm-d-root", str(tree), "--guide", "demo", "--hardware", "nvidia", "--count", "100000"])
    assert code == 2 and "--count" in capsys.readouterr().err


@needs_kustomize
def test_image_policy_keeps_pins_by_default_and_replaces_managed_images_when_asked(tree: Path,
                                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    args = ["deploy", "render", "--llm-d-root", str(tree), "--guide", "demo", "--hardware", "rocm", "--report", "json"]
    assert main(args) == 0
    (kept,) = json.loads(capsys.readouterr().out)["images"]
    assert (kept["action"], kept["image"]) == ("kept", "ghcr.io/llm-d/llm-d-rocm:v0.0.1")  # older than the profile's v0.7.0
    assert main([*args, "--image-policy", "profile"]) == 0
    (replaced,) = json.loads(capsys.readouterr().out)["images"]
    assert (replaced["action"], replaced["upstream"], replaced["image"]) == (
        "replaced", "ghcr.io/llm-d/llm-d-rocm:v0.0.1", "ghcr.io/llm-d/llm-d-rocm:v0.7.0")
    assert main([*args, "--image-policy", "newest"]) == 2
    assert "--image-policy" in capsys.readouterr().err


@needs_kustomize
def test_render_dash_o_is_the_format_and_json_is_the_same_objects_as_a_list(tree: Path, tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str],
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """`-o` named the output file; now it is the format, as in kubectl, and never writes a file."""
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    args = ["deploy", "render", "--llm-d-root", str(tree), "--guide", "demo", "--hardware", "tpu", "--overlay", "v7"]
    assert main(args) == 0
    as_yaml = [o for o in yaml.safe_load_all(capsys.readouterr().out) if o]
    assert main([*args, "-o", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["kind"] == "List" and listed["items"] == as_yaml
    assert main([*args, "-o", "out.yaml"]) == 2
    assert list(workdir.iterdir()) == []


def test_an_empty_filtered_listing_names_the_filter_not_the_checkout() -> None:
    """`deploy guides --hardware X` with no overlay for X asked whether the (fine) checkout was llm-d."""
    from llm_d_lens.deploy.cli import _guides_table
    from llm_d_lens.testing.tables import render

    empty = {"source": {"root": "/src/llm-d", "revision": None, "commit": None},
             "guides": [], "overlays": [], "unsupported": [], "skipped": [], "contents": []}
    filtered = render(_guides_table(empty, only_hardware="intel-gaudi"), 120)
    assert "no overlays match --hardware intel-gaudi in /src/llm-d; drop --hardware to list every overlay" in filtered
    assert "llm-d checkout" not in filtered
    unfiltered = render(_guides_table(empty), 200)
    assert "is /src/llm-d an llm-d checkout" in unfiltered and "--llm-d-root or set LENS_LLM_D_ROOT" in unfiltered
def test_guides_table_fits_80_columns(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["deploy", "guides", "--llm-d-root", str(tree)]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith(" ") and ("ok" in line or "hardware" in line)]
    assert rows and max(len(line.rstrip()) for line in rows) <= 80
    assert "guide demo" in out and "guide flat-tpu" in out  # one table per guide
