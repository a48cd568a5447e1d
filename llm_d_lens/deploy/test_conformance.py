"""Conformance over the real llm-d tree (``../shared/upstream/llm-d``, or ``$LENS_LLM_D_ROOT``).

The expected overlays, counts and shapes below were read by hand from the upstream files at
7edda66 (plus hpu from 6e295e68): e.g. ``gpu/vllm/base/patch-vllm.yaml`` asks for
``nvidia.com/gpu: 2``, ``tpu/v7/vllm`` for ``google.com/tpu: 4``, ``xpu/vllm`` claims one
``gpu.intel.com`` device. ``gpu/vllm/gpt-oss`` is broken upstream (it names
``patch-vllm-gpt120b.yaml``, which does not exist) and must be reported, not fatal.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from llm_d_lens.deploy.conftest import REPO, kustomize_skip_reason, tree_digest
from llm_d_lens.deploy.discovery import discover
from llm_d_lens.deploy.errors import OverlayNotFound, RenderFailed
from llm_d_lens.deploy.service import RenderRequest, describe_guides, render
from llm_d_lens.deploy.source import LlmdSource
from llm_d_lens.deploy.workloads import all_pod_templates
from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.runner import CommandResult, CommandRunner


def llm_d_root() -> Path | None:
    candidates = []
    if os.environ.get("LENS_LLM_D_ROOT"):
        candidates.append(Path(os.environ["LENS_LLM_D_ROOT"]))
    if os.environ.get("LENS_SHARED_ROOT"):
        candidates.append(Path(os.environ["LENS_SHARED_ROOT"]) / "upstream" / "llm-d")
    candidates.append(REPO / ".." / "shared" / "upstream" / "llm-d")
    return next((c.resolve() for c in candidates if (c / "guides").is_dir()), None)


ROOT = llm_d_root()
pytestmark = pytest.mark.skipif(ROOT is None, reason="no llm-d tree: ../shared/upstream/llm-d is absent and $LENS_LLM_D_ROOT is unset")
needs_kustomize = pytest.mark.skipif(kustomize_skip_reason() is not None, reason=kustomize_skip_reason() or "")
GUIDE = "optimized-baseline"
M = f"guides/{GUIDE}/modelserver"

#: variant directory -> the built-in profile that owns it (the amd directory is labelled gpu/amd)
OWNERS = {"amd": "amd", "cpu": "cpu", "gpu": "nvidia", "hpu": "intel-gaudi", "tpu": "google-tpu", "xpu": "intel-xpu"}

#: (hardware, model server, overlay, directory, accelerators per pod) for every renderable overlay
OVERLAYS: list[tuple[str, str, str, str, int]] = [
    ("amd", "sglang", ".", f"{M}/amd/sglang", 2),
    ("amd", "vllm", ".", f"{M}/amd/vllm", 2),
    ("cpu", "vllm", ".", f"{M}/cpu/vllm", 1),  # no accelerator upstream; a dra.cpu claim gets the default of 1
    ("nvidia", "sglang", "base", f"{M}/gpu/sglang/base", 2),
    ("nvidia", "sglang", "gke", f"{M}/gpu/sglang/gke", 2),
    ("nvidia", "trtllm", "base", f"{M}/gpu/trtllm/base", 2),
    ("nvidia", "trtllm", "gke", f"{M}/gpu/trtllm/gke", 2),
    ("nvidia", "vllm", "base", f"{M}/gpu/vllm/base", 2),
    ("nvidia", "vllm", "gke", f"{M}/gpu/vllm/gke", 2),
    ("intel-gaudi", "vllm", ".", f"{M}/hpu/vllm", 1),
    ("google-tpu", "vllm", "v6", f"{M}/tpu/v6/vllm", 8),
    ("google-tpu", "vllm", "v7", f"{M}/tpu/v7/vllm", 4),
    ("intel-xpu", "vllm", ".", f"{M}/xpu/vllm", 1),
]
PRESENT = [row for row in OVERLAYS if ROOT is not None and (ROOT / row[3]).is_dir()]
BROKEN = ("nvidia", "vllm", "gpt-oss", f"{M}/gpu/vllm/gpt-oss", "patch-vllm-gpt120b.yaml")


class MemoRunner(CommandRunner):
    """Runs each kustomize command once per session: every access mode re-fits the same render."""

    results: dict[tuple[str, ...], CommandResult] = {}

    def run(self, argv: Sequence[str], **kwargs: Any) -> CommandResult:  # type: ignore[override]
        key = tuple(argv)
        if key not in self.results:
            self.results[key] = super().run(argv, **kwargs)
        return self.results[key]


def source() -> LlmdSource:
    assert ROOT is not None
    return LlmdSource(ROOT, str(ROOT))


def test_every_variant_directory_is_a_profile_or_listed_unsupported() -> None:
    registry = get_registry()
    catalog = discover(source(), registry)
    owned = {(o.guide, o.variant_dir): o.hardware for o in catalog.overlays}
    unsupported = {(u.guide, u.name) for u in catalog.unsupported}
    assert ROOT is not None
    checked = 0
    for guide_dir in sorted((ROOT / "guides").iterdir()):
        modelserver = guide_dir / "modelserver"
        if not modelserver.is_dir() or guide_dir.name == "recipes":  # the shared recipe library, not a guide
            continue
        for variant in sorted(p.name for p in modelserver.iterdir() if p.is_dir()):
            key = (guide_dir.name, variant)
            assert key in owned or key in unsupported, f"{modelserver / variant} is neither resolved nor reported"
            if guide_dir.name == GUIDE and variant in OWNERS:
                assert owned[key] == OWNERS[variant]
            checked += 1
    assert checked >= len({row[3].split("/")[3] for row in PRESENT})


def test_the_upstream_overlays_are_found_with_their_labels() -> None:
    report = describe_guides(root=ROOT, guide=GUIDE)
    found = {(o["hardware"], o["model_server"], o["overlay"], o["path"]): o for o in report["overlays"]}
    for hardware, server, name, path, _ in PRESENT:
        row = found[(hardware, server, name, path)]
        assert row["status"] == "ok", row
    # the amd directory carries the gpu variant label with vendor amd
    if ROOT is not None and (ROOT / f"{M}/amd/vllm").is_dir():
        assert found[("amd", "vllm", ".", f"{M}/amd/vllm")]["labels"] == {
            "llm-d.ai/accelerator-variant": "gpu", "llm-d.ai/accelerator-vendor": "amd"}


def test_the_broken_upstream_overlay_is_reported_naming_the_file() -> None:
    hardware, server, name, path, missing = BROKEN
    if ROOT is None or not (ROOT / path).is_dir():
        pytest.skip(f"{path} is not in this llm-d tree")
    report = describe_guides(root=ROOT, guide=GUIDE, hardware=hardware)
    row = next(o for o in report["overlays"] if o["path"] == path)
    assert row["status"] == "broken"
    assert f"{missing} does not exist ({path}/{missing})" in row["detail"]
    assert sum(o["status"] == "ok" for o in report["overlays"]) >= 6  # and the rest are fine


@needs_kustomize
def test_the_broken_upstream_overlay_fails_to_render_naming_the_file() -> None:
    hardware, server, name, path, missing = BROKEN
    if ROOT is None or not (ROOT / path).is_dir():
        pytest.skip(f"{path} is not in this llm-d tree")
    with pytest.raises(RenderFailed) as raised:
        render(RenderRequest(guide=GUIDE, hardware=hardware, model_server=server, overlay=name), root=ROOT, runner=MemoRunner())
    assert missing in raised.value.message
    assert raised.value.message.startswith(f"kustomize could not render {path}")


def upstream_request_names(path: str) -> set[str]:
    return {r["name"] for o in upstream_objects(path) if o["kind"] == "ResourceClaimTemplate"
            for r in o["spec"]["spec"]["devices"]["requests"]}


def modes() -> list[tuple[str, str, str, str, int, str]]:
    registry = get_registry()
    return [(*row, mode) for row in PRESENT for mode in registry.get(row[0]).effective_modes()]


@needs_kustomize
@pytest.mark.parametrize("hardware,server,name,path,count,mode", modes(),
                         ids=[f"{r[0]}-{r[1]}-{r[2]}-{r[5]}" for r in modes()])
def test_every_overlay_renders_with_the_shape_of_every_access_mode(hardware: str, server: str, name: str, path: str,
                                                                  count: int, mode: str) -> None:
    result = render(RenderRequest(guide=GUIDE, hardware=hardware, model_server=server, overlay=name, mode=mode),
                    root=ROOT, runner=MemoRunner())
    assert result.choice.overlay.path == path
    profile = get_registry().get(hardware)
    spec = profile.effective_modes()[mode]
    templates = {o["metadata"]["name"]: o for o in result.objects if o["kind"] == "ResourceClaimTemplate"}
    pods = list(all_pod_templates(result.objects))
    assert len(pods) == 1
    pod = pods[0].spec
    container = pod["containers"][0]
    limits = container.get("resources", {}).get("limits", {})
    requests = container.get("resources", {}).get("requests", {})
    device_resources = {k for k in [*limits, *requests] if "/" in k}
    if spec.request_model == "dra":
        assert device_resources == set()
        (claim,) = pod["resourceClaims"]
        assert container["resources"]["claims"][0]["name"] == claim["name"]
        template = templates[claim["resourceClaimTemplateName"]]
        assert template["apiVersion"] == "resource.k8s.io/v1"
        (request,) = template["spec"]["spec"]["devices"]["requests"]
        # a claim the overlay already had keeps upstream's request name; one Lens adds uses the profile's
        assert request["name"] in {spec.claim_request_name, *upstream_request_names(path)}
        assert (request["exactly"]["deviceClassName"], request["exactly"]["count"]) == (spec.device_class, count)
    elif spec.request_model == "extended-resource":
        assert templates == {}
        assert "resourceClaims" not in pod
        resource = spec.resource_names[0]
        assert (limits[resource], requests[resource]) == (count, count)
        assert device_resources == {resource}
    else:
        assert templates == {} and device_resources == set() and "resourceClaims" not in pod
    for toleration in profile.deployment.tolerations:
        assert toleration.to_data(exclude_none=True) in pod["tolerations"]
    assert [w.code for w in result.warnings] == []


@needs_kustomize
def test_rendering_leaves_the_source_untouched() -> None:
    assert ROOT is not None
    before = tree_digest(ROOT)
    for hardware, server, name, _, _ in PRESENT[-3:]:
        render(RenderRequest(guide=GUIDE, hardware=hardware, model_server=server, overlay=name), root=ROOT, runner=CommandRunner())
    assert tree_digest(ROOT) == before


def test_a_source_without_gaudi_overlays_says_so(tmp_path: Path) -> None:
    assert ROOT is not None
    copy = tmp_path / "llm-d"
    shutil.copytree(ROOT / "guides", copy / "guides", ignore=shutil.ignore_patterns("hpu", "hpu-vllm"))
    with pytest.raises(OverlayNotFound) as raised:
        render(RenderRequest(guide=GUIDE, hardware="gaudi"), root=copy, runner=MemoRunner())
    assert raised.value.message.startswith("no overlay for intel-gaudi in this llm-d source (guide optimized-baseline)")


#: wide-ep-lws keeps its accelerator labels in decode.yaml/prefill.yaml, not in any Kustomization;
#: every LeaderWorkerSet worker asks for nvidia.com/gpu: 8 (read from base/decode.yaml and prefill.yaml)
WIDE_EP = [name for name in ("gke", "coreweave", "dgx-cloud-gb200", "topology-aware/gke")
           if ROOT is not None and (ROOT / "guides/wide-ep-lws/modelserver/gpu/vllm" / name).is_dir()]


@needs_kustomize
@pytest.mark.parametrize("name", WIDE_EP)
@pytest.mark.parametrize("mode", ["plugin", "dra"])
def test_wide_ep_overlays_labelled_in_their_resources_render_in_every_mode(name: str, mode: str) -> None:
    result = render(RenderRequest(guide="wide-ep-lws", hardware="nvidia", model_server="vllm", overlay=name, mode=mode),
                    root=ROOT, runner=MemoRunner())
    assert result.choice.status.state == "ok"
    assert set(result.fitted.counts.values()) == {8} and len(result.fitted.counts) == 2
    assert [w.code for w in result.warnings if w.code != "DEVICE_NOT_REGISTERED"] == []  # RDMA NICs are not Lens's


# -- every target of the tree, in every mode, against `kubectl kustomize` of the same directory -------


def targets() -> list[tuple[str, str, str, str, str]]:
    """(guide, hardware, model server, overlay, path) of every overlay the listing calls a target (status ok)."""
    if ROOT is None:
        return []
    rows = describe_guides(root=ROOT)["overlays"]
    return [(r["guide"], r["hardware"], r["model_server"], r["overlay"], r["path"]) for r in rows if r["status"] == "ok"]


def target_modes() -> list[tuple[tuple[str, str, str, str, str], str]]:
    registry = get_registry()
    return [(row, mode) for row in targets() for mode in registry.get(row[1]).effective_modes()]


def upstream_objects(path: str) -> list[dict[str, Any]]:
    assert ROOT is not None
    from llm_d_lens.deploy.render import parse_manifests

    return parse_manifests(MemoRunner().run(["kubectl", "kustomize", str(ROOT / path)]).stdout, path)


def devices_per_pod(objects: list[dict[str, Any]], hardware: str) -> dict[str, int]:
    """Workload -> devices of ``hardware`` per pod, summed over claims and resources (evaluate's own reading)."""
    from llm_d_lens.evaluate.inference import pod_shapes
    from llm_d_lens.hardware.resolution import Resolver

    resolver = Resolver(get_registry())
    counts: dict[str, int] = {}
    for shape in pod_shapes(objects):
        total = sum(n for c, n in shape.device_classes.items() if resolver.match_device_class(c).profile_id == hardware)
        total += sum(n for r, n in shape.resources.items() if resolver.match_resource(r).profile_id == hardware)
        if total:
            counts[shape.source] = counts.get(shape.source, 0) + total
    return counts


def container_images(objects: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    return {(pod.display, str(c.get("name"))): str(c.get("image")) for pod in all_pod_templates(objects) for c in pod.containers()}


@needs_kustomize
@pytest.mark.parametrize("row,mode", target_modes(), ids=[f"{r[4].removeprefix('guides/')}-{m}" for r, m in target_modes()])
def test_every_target_renders_like_kustomize_in_every_mode(row: tuple[str, str, str, str, str], mode: str) -> None:
    guide, hardware, server, name, path = row
    upstream = upstream_objects(path)
    result = render(RenderRequest(guide=guide, hardware=hardware, model_server=server, overlay=name, mode=mode),
                    root=ROOT, runner=MemoRunner())
    assert result.choice.overlay.path == path
    # objects: the same kinds and names; Lens only adds or drops accelerator claim templates
    claim_kind = "ResourceClaimTemplate"
    assert ({(o["kind"], o["metadata"]["name"]) for o in result.objects if o["kind"] != claim_kind}
            == {(o["kind"], o["metadata"]["name"]) for o in upstream if o["kind"] != claim_kind})
    # images: every pin kept; only a placeholder takes the profile's image
    profile = get_registry().get(hardware)
    before, after = container_images(upstream), container_images(result.objects)
    assert after.keys() == before.keys()
    for key, image in before.items():
        assert after[key] == (profile.deployment.runtime_image if re.fullmatch(r"[A-Z][A-Z0-9_]*", image) else image), key
    # accelerator count per pod: upstream's, summed over its claims and resources
    spec = profile.effective_modes()[mode]
    stated = devices_per_pod(upstream, hardware)
    fitted = {k.split(" (")[0]: v for k, v in result.fitted.counts.items()}
    for workload, count in stated.items():
        if spec.request_model != "none":
            assert fitted[workload] == count, workload
    # the request shape of the mode
    shapes = devices_per_pod(result.objects, hardware)
    if spec.request_model == "none":
        assert shapes == {}
    else:
        assert {w: n for w, n in shapes.items()} == fitted
    view_classes = {r["exactly"]["deviceClassName"] for o in result.objects if o["kind"] == claim_kind
                    for r in o["spec"]["spec"]["devices"]["requests"]}
    if spec.request_model == "extended-resource":
        assert spec.device_class is None or spec.device_class not in view_classes
    elif spec.request_model == "dra":
        assert spec.device_class in view_classes
    assert [w.code for w in result.warnings if w.code != "DEVICE_NOT_REGISTERED"] == []


def test_every_kustomization_of_the_tree_is_classified() -> None:
    """Each Kustomization is a target, a building block, a component, a helper, broken upstream, part of a
    guide's contents, one of the shared recipes, or under a variant no profile owns: nothing is left over."""
    assert ROOT is not None
    report = describe_guides(root=ROOT)
    classified = {o["path"]: o["status"] for o in report["overlays"]}
    assert set(classified.values()) <= {"ok", "building-block", "component", "helper", "broken"}
    for contents in report["contents"]:
        for key in ("monitoring", "other", "helpers", "shared"):
            for path in contents[key]:
                classified.setdefault(path, key)
    for row in report["unsupported"]:
        for path in row["overlays"]:
            classified.setdefault(path, "unsupported")
    for path in report["shared"]["gateways"]:
        classified.setdefault(path, "gateway")
    left = []
    for directory, _, files in os.walk(ROOT / "guides"):
        if "kustomization.yaml" in files:
            path = str(Path(directory).relative_to(ROOT))
            if path not in classified and not path.startswith("guides/recipes/"):
                left.append(path)
    assert left == []


@needs_kustomize
def test_overlays_listed_broken_are_the_ones_kustomize_refuses() -> None:
    """A broken overlay is upstream's problem, told by kustomize itself; every other target renders."""
    assert ROOT is not None
    rows = describe_guides(root=ROOT)["overlays"]
    for row in rows:
        if row["status"] not in ("broken", "ok"):
            continue
        completed = subprocess.run(["kubectl", "kustomize", str(ROOT / row["path"])], capture_output=True, text=True)
        assert (completed.returncode != 0) == (row["status"] == "broken"), (row["path"], completed.stderr[-300:])
