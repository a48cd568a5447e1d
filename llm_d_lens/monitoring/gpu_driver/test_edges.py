"""The CLI and API edges: exit codes and messages, dry-run output, the token on mutating endpoints."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.cli.app import main
from llm_d_lens.monitoring.gpu_driver import api as driver_api
from llm_d_lens.monitoring.gpu_driver import cli as driver_cli
from llm_d_lens.monitoring.gpu_driver.clock import FakeClock
from llm_d_lens.monitoring.gpu_driver.conftest import daemonset, kube_version, mutating_calls, node, node_list
from llm_d_lens.monitoring.gpu_driver.kube import ClusterView

NODES = ["kubectl", "get", "nodes", "-o", "json"]


@pytest.fixture
def cli_fake(monkeypatch: pytest.MonkeyPatch, fake: Any) -> Any:
    monkeypatch.setattr(driver_cli, "make_view", lambda context, kubeconfig: ClusterView(fake))
    return fake


def test_cli_dry_run_prints_the_command_and_runs_nothing(cli_fake: Any, capsys: Any) -> None:
    code = main(["driver", "install", "--hardware", "cpu", "--mode", "dra", "--dry-run", "--option", "args.logLevel=2"])
    out = capsys.readouterr().out
    assert code == 0 and cli_fake.calls == []
    assert "would run: helm upgrade --install dra-driver-cpu oci://registry.k8s.io/dra-driver-cpu/charts/dra-driver-cpu " \
           "--version 0.3.0 --namespace kube-system --create-namespace --set-json args.logLevel=2" in out.replace("\n", " ")


@pytest.mark.parametrize("argv,fragment", [
    (["driver", "install", "--hardware", "nvidia", "--mode", "nope"], "ACCESS_MODE_UNKNOWN"),
    (["driver", "install", "--hardware", "intel-gaudi", "--mode", "plugin"], "DRIVER_NOT_MANAGED"),
    (["driver", "install", "--hardware", "no-such-gpu"], "ACCELERATOR_NOT_REGISTERED"),
    (["driver", "plan", "--offline", "--device-class", "npu.rebellions.ai"], "UNSUPPORTED_DEVICES"),
    (["driver", "install", "--device-class", "dra.cpu", "--device-class", "x.example.com"], "UNSUPPORTED_DEVICES"),
])
def test_cli_bad_input_exits_1_with_one_line_and_changes_nothing(cli_fake: Any, capsys: Any, argv: list[str], fragment: str) -> None:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("error: ") and fragment in err and "Traceback" not in err
    assert mutating_calls(cli_fake) == []


def test_cli_too_old_cluster_exits_1(cli_fake: Any, capsys: Any) -> None:
    cli_fake.reply(["kubectl", "version", "-o", "json"], json_body=kube_version("v1.33.4"))
    assert main(["driver", "install", "--hardware", "xpu", "--mode", "dra"]) == 1
    assert "KUBERNETES_TOO_OLD" in capsys.readouterr().err and mutating_calls(cli_fake) == []


def test_cli_helm_missing_exits_1(cli_fake: Any, capsys: Any) -> None:
    cli_fake.missing("helm")
    assert main(["driver", "install", "--hardware", "amd"]) == 1
    assert "COMMAND_NOT_FOUND" in capsys.readouterr().err and cli_fake.calls == []


def test_cli_plan_json(cli_fake: Any, capsys: Any) -> None:
    import json

    assert main(["driver", "plan", "--offline", "--resource", "nvidia.com/gpu", "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(s["hardware"], s["mode"], s["version"]) for s in data["steps"]] == [("nvidia", "plugin", "0.18.2")]
    assert data["cluster_checked"] is False


def test_cli_status_and_preflight(cli_fake: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    cli_fake.reply(["kubectl", "get", "daemonsets", ...], json_body={"kind": "List", "items": []})
    cli_fake.reply(NODES, json_body=node_list(node("g1", {"nvidia.com/gpu.present": "true"})))
    assert main(["driver", "status", "--hardware", "nvidia", "-o", "json"]) == 0
    assert '"state": "not-installed"' in capsys.readouterr().out
    monkeypatch.setattr("llm_d_lens.monitoring.gpu_driver.clock.SystemClock", FakeClock)
    assert main(["preflight", "--hardware", "nvidia"]) == 0
    assert "g1" in capsys.readouterr().out
    assert main(["preflight", "--hardware", "amd"]) == 1
    assert "HARDWARE_NOT_PRESENT" in capsys.readouterr().err


@pytest.fixture
def client(fake: Any) -> Any:
    app = create_app()
    app.dependency_overrides[driver_api.view_factory] = lambda: (lambda context: ClusterView(fake))
    app.dependency_overrides[driver_api.clock] = FakeClock
    return TestClient(app)


def test_api_status_is_read_only_and_open(client: Any, fake: Any) -> None:
    fake.reply(["kubectl", "get", "daemonsets", ...], json_body={"kind": "List", "items": [
        daemonset("kube-system", "dra-driver-cpu", desired=1, ready=1, labels={"app.kubernetes.io/version": "0.3.0"})]})
    fake.reply(NODES, json_body=node_list())
    fake.reply(["kubectl", "get", "pods", ...], json_body={"kind": "List", "items": []})
    response = client.get("/api/v1/drivers/status", params={"hardware": "cpu", "mode": "dra"})
    assert response.status_code == 200
    [mode] = response.json()["modes"]
    assert (mode["hardware"], mode["versions"], mode["desired"]) == ("cpu", ["0.3.0"], 1)


def test_api_mutations_are_off_without_a_token(client: Any, fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(driver_api.TOKEN_ENV, raising=False)
    for path, body in (("/api/v1/drivers/install", {"hardware": "nvidia"}), ("/api/v1/preflight", {"hardware": ["nvidia"]})):
        response = client.post(path, json=body, headers={"Authorization": "Bearer anything"})
        assert response.status_code == 403 and response.json()["code"] == "MUTATIONS_DISABLED"
        assert response.headers["content-type"].startswith("application/problem+json")
    assert fake.calls == []


def test_api_mutations_need_the_configured_token(client: Any, fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(driver_api.TOKEN_ENV, "s3cret")
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret"}):
        response = client.post("/api/v1/drivers/install", json={"hardware": "nvidia"}, headers=headers)
        assert response.status_code == 401
    assert fake.calls == []
    ok = client.post("/api/v1/drivers/install", json={"hardware": "nvidia", "mode": "dra", "dry_run": True},
                     headers={"Authorization": "Bearer s3cret"})
    assert ok.status_code == 200
    assert ok.json()["results"][0]["commands"][0][:5] == ["helm", "upgrade", "--install", "nvidia-dra-driver-gpu", "nvidia-dra-driver-gpu"]


def test_api_install_by_claims_and_refusal(client: Any, fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(driver_api.TOKEN_ENV, "s3cret")
    auth = {"Authorization": "Bearer s3cret"}
    refused = client.post("/api/v1/drivers/install", headers=auth, json={
        "classes": [{"name": "mixed", "claims": [{"device_class": "dra.cpu"}, {"device_class": "gpu.nvidia.com"}]}]})
    assert refused.status_code == 422 and refused.json()["code"] == "DEVICE_CLAIMS_REJECTED"
    planned = client.post("/api/v1/drivers/install", headers=auth, json={
        "dry_run": True, "classes": [{"name": "cpu", "claims": [{"dra_driver": "dra.cpu"}]}]})
    assert planned.status_code == 200
    assert [r["release"] for r in planned.json()["results"]] == ["dra-driver-cpu"]
    assert fake.calls == []


def test_api_preflight(client: Any, fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(driver_api.TOKEN_ENV, "s3cret")
    fake.reply(NODES, json_body=node_list(node("tpu-a", {"cloud.google.com/gke-tpu-accelerator": "tpu7x"})))
    response = client.post("/api/v1/preflight", json={"hardware": ["tpu", "nvidia"]}, headers={"Authorization": "Bearer s3cret"})
    assert response.status_code == 409 and response.json()["code"] == "HARDWARE_NOT_PRESENT"
    response = client.post("/api/v1/preflight", json={"hardware": ["tpu"]}, headers={"Authorization": "Bearer s3cret"})
    assert response.status_code == 200 and response.json()["reports"][0]["matched_nodes"] == ["tpu-a"]


@pytest.mark.parametrize("body", [{}, {"dry_run": True}, {"external": ["dra.net"]}])
def test_api_install_with_nothing_claimed_names_the_body_fields(client: Any, fake: Any, monkeypatch: pytest.MonkeyPatch,
                                                                body: dict[str, Any]) -> None:
    """The API's caller has no --device-class flag; the answer names the fields it can send."""
    monkeypatch.setenv(driver_api.TOKEN_ENV, "s3cret")
    response = client.post("/api/v1/drivers/install", json=body, headers={"Authorization": "Bearer s3cret"})
    assert response.status_code == 422 and response.json()["code"] == "CLAIMS_INVALID"
    assert response.json()["detail"] == "nothing is claimed: give hardware (with mode and options), or classes with their claims"
    assert fake.calls == []


@pytest.mark.parametrize("path,body,field", [
    ("/api/v1/drivers/install", {"hardware": "nvidia", "dry_run": "yes"}, "dry_run"),
    ("/api/v1/drivers/install", {"hardware": "nvidia", "dry_run": 0}, "dry_run"),
    ("/api/v1/drivers/install", {"hardware": 5, "dry_run": True}, "hardware"),
    ("/api/v1/drivers/install", {"hardware": "nvidia", "dry_run": True, "unknown": 1}, "unknown"),
    ("/api/v1/preflight", {"hardware": ["tpu"], "timeout_seconds": 1e300}, "timeout_seconds"),
    ("/api/v1/preflight", {"hardware": ["tpu"], "timeout_seconds": 3601}, "timeout_seconds"),
    ("/api/v1/preflight", {"hardware": ["tpu"], "timeout_seconds": "5"}, "timeout_seconds"),
    ("/api/v1/preflight", {"hardware": ["tpu"], "timeout_seconds": True}, "timeout_seconds"),
])
def test_api_wrong_types_and_absurd_values_are_refused_before_anything_runs(
        client: Any, fake: Any, monkeypatch: pytest.MonkeyPatch, path: str, body: dict[str, Any], field: str) -> None:
    """A string "yes" is not a dry run: read as true by lax coercion, a "false" would have installed."""
    monkeypatch.setenv(driver_api.TOKEN_ENV, "s3cret")
    response = client.post(path, json=body, headers={"Authorization": "Bearer s3cret"})
    assert response.status_code == 422 and response.json()["code"] == "REQUEST_INVALID"
    assert [e["path"] for e in response.json()["errors"]] == [f"body.{field}"]
    assert fake.calls == []


def test_api_a_missing_or_wrong_token_is_a_401_with_a_bearer_challenge(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(driver_api.TOKEN_ENV, "s3cret")
    response = client.post("/api/v1/preflight", json={"hardware": ["tpu"]}, headers={"Authorization": "Bearer s3cre"})
    assert response.status_code == 401 and response.json()["code"] == "UNAUTHORIZED"
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert "s3cret" not in response.text


def test_api_install_with_dry_run_given_twice_is_refused_and_runs_nothing(client: Any, fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(driver_api.TOKEN_ENV, "s3cret")
    response = client.post("/api/v1/drivers/install", content=b'{"hardware": "nvidia", "dry_run": true, "dry_run": false}',
                           headers={"Authorization": "Bearer s3cret", "content-type": "application/json"})
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "body.dry_run"
    assert fake.calls == []


@pytest.mark.parametrize("configured", ["s3cret\n", " s3cret "])
def test_api_a_token_set_from_a_file_with_a_trailing_newline_still_matches(
        client: Any, fake: Any, monkeypatch: pytest.MonkeyPatch, configured: str) -> None:
    """A Secret made with --from-file keeps the file's newline; no header can carry it, so no call could pass."""
    monkeypatch.setenv(driver_api.TOKEN_ENV, configured)
    ok = client.post("/api/v1/drivers/install", json={"hardware": "nvidia", "mode": "dra", "dry_run": True},
                     headers={"Authorization": "Bearer s3cret"})
    assert ok.status_code == 200


def test_api_a_blank_token_leaves_mutations_off(client: Any, fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(driver_api.TOKEN_ENV, " \n")
    response = client.post("/api/v1/preflight", json={"hardware": ["tpu"]}, headers={"Authorization": "Bearer "})
    assert response.status_code == 403 and response.json()["code"] == "MUTATIONS_DISABLED"
    assert fake.calls == []


def test_api_status_reads_another_context_only_for_a_token_holder(client: Any, fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(driver_api.TOKEN_ENV, "s3cret")
    anonymous = client.get("/api/v1/drivers/status", params={"hardware": "cpu", "context": "prod"})
    assert anonymous.status_code == 403 and anonymous.json()["code"] == "CONTEXT_NEEDS_TOKEN"
    assert "'prod'" in anonymous.json()["detail"]
    assert fake.calls == []  # refused before any cluster was asked
    monkeypatch.delenv(driver_api.TOKEN_ENV)
    no_token_configured = client.get("/api/v1/drivers/status", params={"hardware": "cpu", "context": "prod"})
    assert no_token_configured.status_code == 403 and fake.calls == []


def test_the_server_side_view_uses_the_servers_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LENS_KUBE_CONTEXT", "serving")
    monkeypatch.setenv("LENS_KUBECONFIG", "/etc/lens/kubeconfig")
    make = driver_api.view_factory()
    runner = make(None).runner
    assert (runner.context, runner.kubeconfig) == ("serving", "/etc/lens/kubeconfig")
    assert make("other").runner.context == "other"


def test_api_a_missing_tool_on_the_server_is_a_503(client: Any, fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(driver_api.TOKEN_ENV, "s3cret")
    fake.missing("helm", "kubectl")
    response = client.post("/api/v1/drivers/install", json={"hardware": "nvidia", "mode": "dra"},
                           headers={"Authorization": "Bearer s3cret"})
    assert response.status_code == 503
    assert response.json()["code"] == "COMMAND_NOT_FOUND"
    assert response.headers["content-type"].startswith("application/problem+json")
    assert mutating_calls(fake) == []
