"""A small llm-d-shaped tree for the deploy tests, and helpers to read the real one.

The fixture tree has the layouts the real llm-d tree has (flat overlays, provider sub-overlays,
a generation level, an unlabelled shared base, a Component, an unsupported variant, a broken
overlay, a nested guide), each in a few lines, so every test can see what it is reading.
"""

from __future__ import annotations

import copy
import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from llm_d_lens.deploy.source import LlmdSource
from llm_d_lens.hardware.discovery import DiscoveredProfile, canonical
from llm_d_lens.hardware.errors import ProfileOrigin
from llm_d_lens.hardware.loader import validate_payload
from llm_d_lens.hardware.registry import Registry

REPO = Path(__file__).resolve().parents[2]

BASE_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: decode
  labels:
    llm-d.ai/role: decode
spec:
  selector:
    matchLabels:
      llm-d.ai/role: decode
  template:
    metadata:
      labels:
        llm-d.ai/role: decode
    spec:
      containers:
        - name: modelserver
          image: REPLACE_IMAGE
          args: ["Qwen/Qwen3-0.6B"]
"""


def overlay(variant: str, vendor: str, *, up: int, image: str, resources: str = "", extra: str = "",
            patch_file: str | None = None) -> str:
    """A Kustomization like upstream's: the shared base, an image, the accelerator labels, a patch."""
    base = "../" * up + "recipes/modelserver/base"
    patch = f"patches:\n  - path: {patch_file}\n" if patch_file else ""
    inline = ""
    if resources:
        inline = (
            "patches:\n  - patch: |-\n      apiVersion: apps/v1\n      kind: Deployment\n      metadata:\n        name: decode\n"
            "      spec:\n        template:\n          spec:\n            containers:\n              - name: modelserver\n"
            "                resources:\n" + "".join(f"                  {line}\n" for line in resources.splitlines())
        )
    name, _, tag = image.rpartition(":")
    return (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources:\n  - {base}\n{extra}"
        f"images:\n  - name: REPLACE_IMAGE\n    newName: {name}\n    newTag: \"{tag}\"\n"
        "labels:\n  - pairs:\n      llm-d.ai/guide: demo\n"
        f"      llm-d.ai/accelerator-variant: {variant}\n      llm-d.ai/accelerator-vendor: {vendor}\n"
        "    includeSelectors: true\n    includeTemplates: true\n"
        f"{patch}{inline}"
    )


GPU_LIMITS = "limits:\n  nvidia.com/gpu: 2\nrequests:\n  nvidia.com/gpu: 2"

XPU_CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: xpu-claim
spec:
  spec:
    devices:
      requests:
        - name: intel
          exactly:
            deviceClassName: gpu.intel.com
            count: 1
"""

XPU_PATCH = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: decode
spec:
  template:
    spec:
      containers:
        - name: modelserver
          resources:
            claims:
              - name: xpu
      resourceClaims:
        - name: xpu
          resourceClaimTemplateName: xpu-claim
"""

# Relative path -> content. "modelserver/<variant>/..." paths of guide "demo".
FILES: dict[str, str] = {
    "guides/recipes/modelserver/base/kustomization.yaml": "resources:\n  - deployment.yaml\n"
    "configurations:\n  - namereference.yaml\n",
    "guides/recipes/modelserver/base/deployment.yaml": BASE_DEPLOYMENT,
    "guides/recipes/modelserver/base/namereference.yaml": "nameReference:\n  - kind: ResourceClaimTemplate\n"
    "    fieldSpecs:\n      - path: spec/template/spec/resourceClaims/resourceClaimTemplateName\n        kind: Deployment\n",
    "guides/demo/modelserver/gpu/vllm/base/kustomization.yaml": overlay(
        "gpu", "nvidia", up=5, image="vllm/vllm-openai:v0.1.0", resources=GPU_LIMITS),
    "guides/demo/modelserver/gpu/vllm/gke/kustomization.yaml": "resources:\n  - ../base\n",
    "guides/demo/modelserver/gpu/vllm/broken/kustomization.yaml": "resources:\n  - ../base\n"
    "patches:\n  - path: patch-missing.yaml\n",
    "guides/demo/modelserver/gpu/sglang/kustomization.yaml": overlay(
        "gpu", "nvidia", up=4, image="registry.example.com/team/sglang:custom", resources=GPU_LIMITS),
    "guides/demo/modelserver/amd/vllm/kustomization.yaml": overlay(
        "gpu", "amd", up=4, image="ghcr.io/llm-d/llm-d-rocm:v0.0.1",
        resources="limits:\n  amd.com/gpu: 1\nrequests:\n  amd.com/gpu: 1"),
    "guides/demo/modelserver/xpu/vllm/kustomization.yaml": overlay(
        "xpu", "intel", up=4, image="ghcr.io/llm-d/llm-d-xpu:v0.7.0", extra="  - claim.yaml\n", patch_file="patch.yaml"),
    "guides/demo/modelserver/xpu/vllm/claim.yaml": XPU_CLAIM,
    "guides/demo/modelserver/xpu/vllm/patch.yaml": XPU_PATCH,
    "guides/demo/modelserver/tpu/v6/vllm/kustomization.yaml": overlay(
        "tpu", "google", up=5, image="vllm/vllm-tpu:v0.22.0", resources="limits:\n  google.com/tpu: 8\nrequests:\n  google.com/tpu: 8"),
    "guides/demo/modelserver/tpu/v7/vllm/kustomization.yaml": overlay(
        "tpu", "google", up=5, image="vllm/vllm-tpu:v0.22.0", resources="limits:\n  google.com/tpu: 4\nrequests:\n  google.com/tpu: 4"),
    "guides/demo/modelserver/tpu/base/vllm/kustomization.yaml": "resources:\n  - ../../../../../recipes/modelserver/base\n",
    "guides/demo/modelserver/npu/vllm/kustomization.yaml": overlay("npu", "rebellions", up=4, image="example.com/npu:1"),
    "guides/demo/modelserver/components/extra/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\n"
    "kind: Component\n",
    "guides/flat-tpu/modelserver/tpu/vllm/kustomization.yaml": overlay(
        "tpu", "google", up=4, image="vllm/vllm-tpu:v0.22.0", resources="limits:\n  google.com/tpu: 4\nrequests:\n  google.com/tpu: 4"),
    "guides/serving/multimodal/modelserver/cpu/vllm/kustomization.yaml": overlay(
        "cpu", "intel", up=5, image="ghcr.io/llm-d/llm-d-cpu:v0.7.0"),
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "llm-d", FILES)


@pytest.fixture
def source(tree: Path) -> LlmdSource:
    return LlmdSource(tree.resolve(), str(tree))


def tree_digest(root: Path) -> dict[str, str]:
    """Every entry under ``root`` with its content hash (or link target), to prove nothing changed."""
    digest = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(directory, name)
            relative = str(path.relative_to(root))
            if path.is_symlink():
                digest[relative] = "link:" + os.readlink(path)
            elif path.is_file():
                digest[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                digest[relative] = "dir"
    return digest


def kustomize_skip_reason() -> str | None:
    if shutil.which("kubectl") or shutil.which("kustomize"):
        return None
    return "neither kubectl nor kustomize is installed; rendering needs the real kustomize"


needs_kustomize = pytest.mark.skipif(kustomize_skip_reason() is not None, reason=kustomize_skip_reason() or "")


def registry_of(*payloads: dict[str, Any]) -> Registry:
    """A registry holding exactly these profiles (each checked like a vendor's would be)."""
    found = []
    for payload in payloads:
        profile = validate_payload(payload, f"test profile {payload['id']}")
        found.append(DiscoveredProfile(profile, canonical(payload), [ProfileOrigin("file", f"test:{payload['id']}")]))
    return Registry(found)


#: A hardware no Lens code knows: it must work from its profile alone.
ACME = {
    "id": "acme",
    "display_name": "Acme Accelerator",
    "vendor": "acme",
    "accelerator_keys": ["acme-npu"],
    "benchmark_profile": None,
    "upstream_variant": "acc",
    "upstream_vendor": "acme",
    "request_model": "dra",
    "device_classes": ["npu.acme.example"],
    "resource_prefixes": ["acme.example/npu"],
    "access_modes": ["dra", "plugin"],
    "deployment": {
        "overlay_root": "guides/{guide}/modelserver/{variant}/{model_server}",
        "arch": "acc",
        "runtime_image": "registry.acme.example/serve:2.0",
        "managed_image_repositories": ["registry.acme.example/serve"],
        "runtime_class_matchers": ["^acme"],
        "tolerations": [{"key": "acme.example/npu", "operator": "Exists", "effect": "NoSchedule"}],
        "node_selector": {"acme.example/npu.present": "true"},
        "modes": {
            "dra": {"request_model": "dra", "device_class": "npu.acme.example", "claim_request_name": "npu",
                    "supports_pci_allowlist": True, "pci_attribute_domain": "resource.kubernetes.io",
                    "pci_attribute": "pciBusID"},
            "plugin": {"request_model": "extended-resource", "resource_names": ["acme.example/npu"]},
        },
    },
}


# -- rendered objects, written by hand, for the fitting and validation tests ----------------

LABELS = {"llm-d.ai/accelerator-variant": "gpu", "llm-d.ai/accelerator-vendor": "nvidia", "llm-d.ai/role": "decode"}


def deployment(resources: dict[str, Any] | None = None, *, image: str = "vllm/vllm-openai:v0.23.0",
               labels: dict[str, str] | None = None, args: list[str] | None = None, name: str = "ob-decode",
               claims: list[dict[str, str]] | None = None, uses: list[dict[str, str]] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "modelserver", "image": image, "args": args or ["Qwen/Qwen3-32B"]}
    if resources is not None:
        container["resources"] = copy.deepcopy(resources)
    if uses:
        container.setdefault("resources", {})["claims"] = uses
    spec: dict[str, Any] = {"containers": [container, {"name": "sidecar", "image": "busybox"}]}
    if claims:
        spec["resourceClaims"] = claims
    labels = dict(LABELS if labels is None else labels)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
            "spec": {"template": {"metadata": {"labels": labels}, "spec": spec}}}


def claim_template(name: str, *requests: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": name},
            "spec": {"spec": {"devices": {"requests": list(requests)}}}}


GPU2 = {"limits": {"cpu": "16", "nvidia.com/gpu": 2}, "requests": {"cpu": "8", "nvidia.com/gpu": 2}}
