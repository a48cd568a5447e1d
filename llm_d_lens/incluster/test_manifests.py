"""Every overlay of manifests/ renders with the real ``kubectl kustomize`` into objects a cluster accepts.

Objects are validated against the Kubernetes JSON schemas of the oldest and newest versions Lens
supports (the ``kubernetes-validate`` package ships them, strict: an unknown field is an error), and
the pod is checked for what a security review asks: non-root, read-only root filesystem, no
privilege escalation, limits, probes on paths the server really serves.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from llm_d_lens.incluster.manifests import OVERLAYS, ROLES, manifests_root, render
from llm_d_lens.runner import CommandRunner

ROOT = manifests_root()
pytestmark = [
    pytest.mark.skipif(ROOT is None, reason="no manifests/ folder: this is not a source checkout"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed; overlays are rendered "
                                                                "with the real `kubectl kustomize`"),
]
#: oldest and newest Kubernetes Lens supports: DRA's resource.k8s.io/v1 is GA from 1.34
KUBERNETES_VERSIONS = ("1.34.0", "1.36.0")
_RENDERS: dict[str, list[dict[str, Any]]] = {}


def rendered(overlay: str) -> list[dict[str, Any]]:
    assert ROOT is not None
    if overlay not in _RENDERS:
        directory = ROOT if overlay == "default" else ROOT / "overlays" / overlay
        _RENDERS[overlay] = render(directory, CommandRunner())
    return _RENDERS[overlay]


def one(objects: list[dict[str, Any]], kind: str, name: str = "lens") -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (lens,) = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    return lens


def env(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container(objects)["env"]}


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_object_of_every_overlay_is_valid_for_the_supported_kubernetes(overlay: str, version: str) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate (test extra)")
    objects = rendered(overlay)
    problems = []
    for obj in objects:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            problems.append(f"{obj['kind']}/{obj['metadata']['name']}: {exc.message} at {list(exc.path)}")
    assert problems == []
    # the validator does reject a misspelt field, so the empty list above means something
    deployment = one(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    typo = {**container(objects), "securityContext": {"readOnlyRootFileSystem": True}}
    broken = {**deployment, "spec": {**deployment["spec"], "template": {
        **deployment["spec"]["template"], "spec": {**pod, "containers": [typo]}}}}
    with pytest.raises(kubernetes_validate.ValidationError, match="readOnlyRootFileSystem"):
        kubernetes_validate.validate(broken, version, strict=True)


def test_the_default_is_the_read_only_overlay() -> None:
    assert rendered("default") == rendered("read-only")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_overlay_binds_exactly_its_roles_to_the_lens_account(overlay: str) -> None:
    objects = rendered(overlay)
    roles = sorted(o["metadata"]["name"] for o in objects if o["kind"] == "ClusterRole")
    assert roles == sorted(ROLES[overlay])
    bindings = [o for o in objects if o["kind"] in ("ClusterRoleBinding", "RoleBinding")]
    assert sorted(b["roleRef"]["name"] for b in bindings) == sorted(ROLES[overlay])
    for binding in bindings:
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "lens", "namespace": "lens"}]
    assert one(objects, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "lens"
    assert {o["metadata"].get("namespace") for o in objects if o["kind"] in ("Deployment", "Service", "ServiceAccount")} == {"lens"}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_pod_is_non_root_read_only_unprivileged_and_bounded(overlay: str) -> None:
    objects = rendered(overlay)
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    lens = container(objects)
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    context = lens["securityContext"]
    assert context["allowPrivilegeEscalation"] is False and context["readOnlyRootFilesystem"] is True
    assert context["capabilities"] == {"drop": ["ALL"]} and context.get("privileged") is False
    assert set(lens["resources"]["requests"]) == {"cpu", "memory"} == set(lens["resources"]["limits"])
    # a read-only root needs somewhere for kubectl's discovery cache and helm's config: HOME is an emptyDir
    mounts = {m["mountPath"]: m["name"] for m in lens["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts[env(objects)["HOME"]]]
    assert lens["command"] == ["lens"] and lens["args"][:1] == ["serve"]
    assert "--host" in lens["args"] and lens["args"][lens["args"].index("--host") + 1] == "0.0.0.0"
    assert one(objects, "Namespace")["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_the_probes_are_healthz_for_liveness_and_readyz_for_readiness_on_the_served_port() -> None:
    lens = container(rendered("read-only"))
    assert lens["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert lens["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    (port,) = lens["ports"]
    assert port["name"] == "http" and f"--port {port['containerPort']}" in " ".join(lens["args"])
    service = one(rendered("read-only"), "Service")
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    selector = service["spec"]["selector"]
    labels = one(rendered("read-only"), "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= labels.items()


def test_the_probe_paths_are_served_by_the_api() -> None:
    from fastapi.testclient import TestClient

    from llm_d_lens.api.app import create_app

    app = create_app()
    client = TestClient(app)
    assert client.get("/healthz").status_code == 200
    assert "/readyz" in {getattr(route, "path", None) for route in app.routes}
    assert client.get("/readyz").status_code in (200, 503)  # 503: not ready, with the problems listed


def test_only_the_installer_turns_mutations_on_and_its_token_comes_from_a_secret() -> None:
    assert "LENS_API_TOKEN" not in env(rendered("read-only"))
    assert "LENS_API_TOKEN" not in env(rendered("prometheus"))
    assert env(rendered("installer"))["LENS_API_TOKEN"] == {
        "secretKeyRef": {"name": "lens-api-token", "key": "token", "optional": True}}
    # no overlay carries a token value, and none ships the Secret: the operator creates it
    for overlay in OVERLAYS:
        assert not [o for o in rendered(overlay) if o["kind"] == "Secret"]


def test_the_prometheus_overlay_sets_the_one_url_the_telemetry_api_reads() -> None:
    from llm_d_lens.monitoring.settings import TelemetrySettings
    from llm_d_lens.prometheus.client import normalise_url

    values = env(rendered("prometheus"))
    settings = TelemetrySettings.from_env({k: v for k, v in values.items() if isinstance(v, str)})
    assert settings.prometheus_url is not None
    assert normalise_url(settings.prometheus_url).startswith("http://")
    assert settings.cluster_objects == ("kubectl",)  # the joins read the live cluster through the account
    assert "LENS_PROMETHEUS_URL" not in env(rendered("read-only"))


def test_in_cluster_the_server_names_no_kubeconfig_or_context() -> None:
    """kubectl falls back to the pod's service account only when no kubeconfig or context is chosen."""
    for overlay in OVERLAYS:
        names = set(env(rendered(overlay)))
        assert not names & {"KUBECONFIG", "LENS_KUBECONFIG", "LENS_KUBE_CONTEXT"}, overlay
        assert one(rendered(overlay), "Deployment")["spec"]["template"]["spec"]["automountServiceAccountToken"] is True


def test_a_broken_overlay_fails_to_render_naming_the_file(tmp_path: Path) -> None:
    from llm_d_lens.runner import CommandFailed

    (tmp_path / "kustomization.yaml").write_text("resources:\n  - missing.yaml\n", encoding="utf-8")
    with pytest.raises(CommandFailed, match="missing.yaml"):
        render(tmp_path, CommandRunner())


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_server_built_from_the_pod_environment_runs_kubectl_and_helm_with_no_kubeconfig(
        overlay: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the Deployment's environment, every runner the API builds leaves kubectl to find the service account."""
    from llm_d_lens.cluster.source import ClusterSource
    from llm_d_lens.incluster.api import permissions_runner
    from llm_d_lens.monitoring.gpu_driver.api import view_factory

    for name in ("KUBECONFIG", "LENS_KUBECONFIG", "LENS_KUBE_CONTEXT", "LENS_CLUSTER_SNAPSHOT", "LENS_CLUSTER_DEMO"):
        monkeypatch.delenv(name, raising=False)
    values = env(rendered(overlay))
    for name, value in values.items():
        monkeypatch.setenv(name, value if isinstance(value, str) else "token-from-secret")
    source = ClusterSource.from_env()
    assert source.live and source.timeout == float(values["LENS_KUBECTL_TIMEOUT"])
    runners = [source.runner(), view_factory()(None).runner, permissions_runner()]
    for runner in runners:
        for tool in ("kubectl", "helm"):
            argv = (tool, "list")
            assert runner._inject_cluster_flags(argv) == argv  # no --kubeconfig, no --context/--kube-context


def test_an_operators_own_overlay_sets_the_image_and_combines_installer_and_prometheus(tmp_path: Path) -> None:
    """What docs/in-cluster.md tells an operator to write, outside manifests/, renders as it says."""
    assert ROOT is not None
    mine = tmp_path / "my-lens"
    mine.mkdir()
    up = os.path.relpath(ROOT, mine)  # kustomize takes relative paths only, as the docs write them
    (mine / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources:\n  - {up}/base\n"
        f"components:\n  - {up}/components/installer\n  - {up}/components/prometheus\n"
        "images:\n  - name: llm-d-lens\n    newName: registry.example.com/llm-d-lens\n    newTag: 0.2.0\n",
        encoding="utf-8")
    objects = render(mine, CommandRunner())
    assert container(objects)["image"] == "registry.example.com/llm-d-lens:0.2.0"
    assert {"LENS_API_TOKEN", "LENS_PROMETHEUS_URL"} <= set(env(objects))
    assert sorted(o["metadata"]["name"] for o in objects if o["kind"] == "ClusterRole") == sorted(ROLES["installer"])
