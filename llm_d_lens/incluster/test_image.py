"""The Containerfile and the Deployment agree: user, HOME, port, command, tool versions, image tag.

The image is not built on this machine (no container engine, no route to the download hosts), so
these checks read the Containerfile as text; what they catch is the drift that would make a built
image fail in the pod (a uid the securityContext does not expect, a port the probes do not hit).
"""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path

import pytest

from llm_d_lens.incluster.manifests import manifests_root, render
from llm_d_lens.runner import CommandRunner

ROOT = manifests_root()
REPO = Path(__file__).resolve().parents[2]
CONTAINERFILE = REPO / "Containerfile"
pytestmark = [
    pytest.mark.skipif(ROOT is None or not CONTAINERFILE.is_file(), reason="no manifests/ or Containerfile: not a source checkout"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed; the Deployment is rendered "
                                                                "with the real `kubectl kustomize`"),
]
#: the Kubernetes minors Lens supports (DRA's resource.k8s.io/v1 from 1.34); kubectl talks to servers one minor off
SUPPORTED_MINORS = (34, 36)


def text() -> str:
    return CONTAINERFILE.read_text(encoding="utf-8")


def arg(name: str) -> str:
    found = re.search(rf"^ARG {name}=(\S+)$", text(), re.M)
    assert found, f"Containerfile pins no ARG {name}"
    return found.group(1)


@pytest.fixture(scope="module")
def deployment() -> dict:
    assert ROOT is not None
    (found,) = [o for o in render(ROOT, CommandRunner()) if o["kind"] == "Deployment"]
    return found


def test_the_image_says_plainly_it_was_not_built_here() -> None:
    assert "NOT BUILT HERE" in text()


def test_base_image_and_tools_are_pinned_to_exact_versions() -> None:
    base = arg("PYTHON_IMAGE")
    tag = base.rsplit(":", 1)[1]
    assert re.fullmatch(r"3\.(\d+)\.\d+-slim-bookworm", tag), base
    requires = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["requires-python"]
    assert int(tag.split(".")[1]) >= int(requires.removeprefix(">=3."))
    kubectl = re.fullmatch(r"v1\.(\d+)\.\d+", arg("KUBECTL_VERSION"))
    oldest, newest = SUPPORTED_MINORS
    assert kubectl and newest - 1 <= int(kubectl.group(1)) <= oldest + 1, "kubectl must be within one minor of each supported server"
    assert re.fullmatch(r"v3\.\d+\.\d+", arg("HELM_VERSION"))  # Lens's helm calls are written against helm 3
    # every download is checked against its published checksum
    assert text().count("sha256sum -c -") == 2


def test_the_image_user_and_home_are_what_the_pod_expects(deployment: dict) -> None:
    pod = deployment["spec"]["template"]["spec"]
    (lens,) = pod["containers"]
    user = re.search(r"^USER (\d+):(\d+)$", text(), re.M)
    assert user and (int(user.group(1)), int(user.group(2))) == (pod["securityContext"]["runAsUser"],
                                                                  pod["securityContext"]["runAsGroup"])
    home = re.search(r"ENV HOME=(\S+)", text())
    assert home and {"name": "HOME", "value": home.group(1)} in lens["env"]
    assert home.group(1) in {m["mountPath"] for m in lens["volumeMounts"]}


def test_the_image_serves_on_the_port_and_command_the_deployment_runs(deployment: dict) -> None:
    (lens,) = deployment["spec"]["template"]["spec"]["containers"]
    assert f'ENTRYPOINT ["{lens["command"][0]}"]' in text()
    cmd = re.search(r"^CMD (\[.*\])$", text(), re.M)
    assert cmd and json.loads(cmd.group(1)) == lens["args"]
    assert f"EXPOSE {lens['ports'][0]['containerPort']}" in text()


def test_the_image_tag_is_the_package_version(deployment: dict) -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    (lens,) = deployment["spec"]["template"]["spec"]["containers"]
    assert lens["image"] == f"llm-d-lens:{version}"
