"""A live cluster through kubectl (scripted with FakeRunner), and the ``lens cluster`` commands."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from llm_d_lens.cli.app import main
from llm_d_lens.cluster import source as source_module
from llm_d_lens.cluster.inventory import build_inventory
from llm_d_lens.cluster.live import fetch_sync
from llm_d_lens.cluster.snapshot import load_snapshot
from llm_d_lens.testing.cluster import (
    as_list,
    attributes,
    claim,
    device,
    device_class,
    node,
    pod,
    resource_slice,
)
from llm_d_lens.runner import CommandFailed, CommandNotFound, CommandOutputInvalid
from llm_d_lens.testing.fake_runner import FakeRunner

NODES = ["kubectl", "get", "nodes", "-o", "json"]
PODS = ["kubectl", "get", "pods", "--all-namespaces", "-o", "json"]
SLICES = ["kubectl", "get", "resourceslices.resource.k8s.io", "-o", "json"]
CLASSES = ["kubectl", "get", "deviceclasses.resource.k8s.io", "-o", "json"]
CLAIMS = ["kubectl", "get", "resourceclaims.resource.k8s.io", "--all-namespaces", "-o", "json"]
NO_TYPE = 'error: the server doesn\'t have a resource type "{}"\n'


def dra_cluster(fake: FakeRunner, **instead: dict[str, Any]) -> FakeRunner:
    """A small DRA cluster; ``instead={"NODES": {...reply...}}`` scripts another answer for one call."""
    gpus = [device(f"gpu-{i}", attrs=attributes(type="gpu", model="Max 1550"), capacity={"memory": "128Gi"}) for i in range(8)]
    answers: dict[str, tuple[list[str], dict[str, Any]]] = {
        "NODES": (NODES, {"json_body": as_list(node("xpu-1", labels={"intel.feature.node.kubernetes.io/gpu": "true"}),
                                               node("h100", resources={"nvidia.com/gpu": "8"}))}),
        "PODS": (PODS, {"json_body": as_list(pod("a", "h100", limits={"nvidia.com/gpu": "2"}))}),
        "SLICES": (SLICES, {"json_body": as_list(resource_slice("xpu-1-gpu", driver="gpu.intel.com", node_name="xpu-1",
                                                                devices=gpus))}),
        "CLASSES": (CLASSES, {"json_body": as_list(device_class("gpu.intel.com", driver="gpu.intel.com"))}),
        "CLAIMS": (CLAIMS, {"json_body": as_list(claim("c", results=[("gpu.intel.com", "xpu-1", "gpu-0")], reserved_for=["b"]))}),
    }
    for name, (argv, reply) in answers.items():
        fake.reply(argv, **instead.get(name, reply))
    return fake


def no_dra_cluster(fake: FakeRunner) -> FakeRunner:
    fake.reply(NODES, json_body=as_list(node("h100", resources={"nvidia.com/gpu": "8"})))
    fake.reply(PODS, json_body=as_list(pod("a", "h100", limits={"nvidia.com/gpu": "8"})))
    for argv, kind in ((SLICES, "resourceslices"), (CLASSES, "deviceclasses"), (CLAIMS, "resourceclaims")):
        fake.reply(argv, returncode=1, stderr=NO_TYPE.format(f"{kind}.resource.k8s.io"))
    return fake


def test_a_live_cluster_is_read_with_five_kubectl_calls_on_the_chosen_context() -> None:
    fake = dra_cluster(FakeRunner(context="prod", kubeconfig="/home/me/.kube/config"))
    objects = fetch_sync(fake)
    assert objects.counts() == {"Node": 2, "Pod": 1, "ResourceSlice": 1, "DeviceClass": 1, "ResourceClaim": 1}
    assert objects.dra_api is True
    assert sorted(fake.argvs()) == sorted(
        [argv[0], "--kubeconfig", "/home/me/.kube/config", "--context", "prod", *argv[1:]] for argv in (NODES, PODS, SLICES, CLASSES, CLAIMS))
    overview = build_inventory(objects).to_dict()
    assert [(b["profile_id"], b["devices"], b["allocated"]) for b in overview["vendors"]] == [("intel-xpu", 8, 1), ("nvidia", 8, 2)]


def test_a_cluster_without_the_dra_api_is_a_cluster_without_dra() -> None:
    objects = fetch_sync(no_dra_cluster(FakeRunner()))
    assert objects.dra_api is False
    assert objects.counts()["ResourceSlice"] == 0
    assert build_inventory(objects).to_dict()["total_gpu_count"] == 8


def test_kubectl_missing_is_an_install_problem_named_as_such() -> None:
    with pytest.raises(CommandNotFound, match="`kubectl` was not found on PATH"):
        fetch_sync(FakeRunner().missing("kubectl"))


def test_kubectl_failing_quotes_its_stderr_for_core_kinds_and_dra_kinds_alike() -> None:
    expired = {"returncode": 1, "stderr": "error: You must be logged in to the server (Unauthorized)\n"}
    with pytest.raises(CommandFailed, match=r"kubectl get nodes -o json` failed with exit code 1: error: You must be logged in"):
        fetch_sync(dra_cluster(FakeRunner(), NODES=expired))
    forbidden = {"returncode": 1, "stderr": "Error from server (Forbidden): resourceslices.resource.k8s.io is forbidden\n"}
    with pytest.raises(CommandFailed, match="is forbidden"):
        fetch_sync(dra_cluster(FakeRunner(), SLICES=forbidden))


def test_kubectl_printing_something_other_than_json_is_named() -> None:
    with pytest.raises(CommandOutputInvalid, match="kubectl get pods --all-namespaces -o json` did not print valid JSON"):
        fetch_sync(dra_cluster(FakeRunner(), PODS={"stdout": "No resources found\n"}))


def test_kubectl_printing_json_nested_too_deeply_is_named_not_a_traceback() -> None:
    with pytest.raises(CommandOutputInvalid, match=r"kubectl get pods --all-namespaces -o json` did not print valid JSON.*nested too deeply"):
        fetch_sync(dra_cluster(FakeRunner(), PODS={"stdout": "[" * 100_000 + "]" * 100_000}))


class _OrderedFailures(FakeRunner):
    """kubectl get nodes fails only after every other call has finished (a slow API server)."""

    def __init__(self) -> None:
        super().__init__()
        self.finished: list[str] = []
        self._others_done = asyncio.Event()

    async def arun(self, argv, **kwargs):  # type: ignore[no-untyped-def,override]
        if argv[:3] == ["kubectl", "get", "nodes"]:
            await self._others_done.wait()
        try:
            return await super().arun(argv, **kwargs)
        finally:
            self.finished.append(argv[2])
            if len(self.finished) == 4:
                self._others_done.set()


def test_a_failing_kubectl_lets_the_other_calls_finish_and_the_first_query_names_the_error() -> None:
    # Cancelling calls still running kills kubectl processes mid-flight (and asyncio may then warn
    # about an unknown child); which error is shown must not depend on timing either.
    fake = dra_cluster(_OrderedFailures(), NODES={"returncode": 1, "stderr": "error: You must be logged in to the server (Unauthorized)"},
                       PODS={"returncode": 1, "stderr": "error: pods are slow"})
    with pytest.raises(CommandFailed) as caught:
        fetch_sync(fake)
    assert "kubectl get nodes -o json" in str(caught.value) and "Unauthorized" in str(caught.value)
    assert sorted(fake.finished) == sorted(["nodes", "pods", "resourceslices.resource.k8s.io",
                                            "deviceclasses.resource.k8s.io", "resourceclaims.resource.k8s.io"])


# -- the lens cluster commands ------------------------------------------------------------------


@pytest.fixture
def use_fake(monkeypatch: pytest.MonkeyPatch) -> list[FakeRunner]:
    """Make live sources use a FakeRunner carrying the source's kubeconfig/context; returns the runners made."""
    made: list[FakeRunner] = []

    def make(source: Any) -> FakeRunner:
        fake = no_dra_cluster(FakeRunner(context=source.context, kubeconfig=source.kubeconfig))
        made.append(fake)
        return fake

    monkeypatch.setattr(source_module, "make_runner", make)
    return made


def test_inspect_a_live_context_prints_json(use_fake: list[FakeRunner], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "inspect", "--context", "staging", "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["source"] == {"kind": "live", "context": "staging", "kubeconfig": None}
    assert (data["total_gpu_count"], data["dra_api"]) == (8, False)
    assert all("--context" in argv and "staging" in argv for argv in use_fake[0].argvs())


def test_inspect_the_demo_prints_a_table_with_every_vendor(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "inspect", "--demo", "--nodes", "-o", "wide"]) == 0
    out = capsys.readouterr().out
    for name in ("NVIDIA GPU", "AMD Instinct GPU", "Intel Gaudi", "Google Cloud TPU", "CPU inference", "gpu-h100-mig-01",
                 "driver missing?", "dra.net"):
        assert name in out
    assert "embedded demo snapshot: 60 accelerators" in out


def test_inspect_a_bad_snapshot_exits_1_with_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(as_list(node("gpu-node-3", resources={"nvidia.com/gpu": "8"}, allocatable={"nvidia.com/gpu": "x"}))))
    assert main(["cluster", "inspect", "--snapshot", str(bad)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f'error: CLUSTER_OBJECT_INVALID: {bad}: Node gpu-node-3: status.allocatable["nvidia.com/gpu"]: '
                            '"x" is not a quantity\n')


def test_inspect_refuses_two_sources_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "inspect", "--demo", "--context", "prod"]) == 1
    assert "error: CLUSTER_SOURCE_CONFLICT: the demo is read from a file" in capsys.readouterr().err


def test_inspect_without_kubectl_says_so(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(source_module, "make_runner", lambda source: FakeRunner().missing("kubectl"))
    assert main(["cluster", "inspect"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: COMMAND_NOT_FOUND: `kubectl` was not found on PATH") and "Traceback" not in err


def test_snapshot_writes_what_inspect_reads_back(use_fake: list[FakeRunner], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "prod.json.gz"
    assert main(["cluster", "snapshot", "--output-file", str(target), "--context", "prod"]) == 0
    assert f"wrote {target}: 1 Node, 1 Pod, 0 ResourceSlice" in capsys.readouterr().err
    assert load_snapshot(target).counts() == {"Node": 1, "Pod": 1, "ResourceSlice": 0, "DeviceClass": 0, "ResourceClaim": 0}
    assert main(["cluster", "inspect", "--snapshot", str(target), "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["total_gpu_count"] == 8


def test_snapshot_never_overwrites_without_force_and_asks_the_cluster_nothing(use_fake: list[FakeRunner], tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "prod.json"
    target.write_text("keep me")
    assert main(["cluster", "snapshot", "--output-file", str(target)]) == 1
    assert "error: CLUSTER_SNAPSHOT_EXISTS" in capsys.readouterr().err
    assert target.read_text() == "keep me"
    assert use_fake == []  # refused before any kubectl call
    assert main(["cluster", "snapshot", "--output-file", str(target), "--force"]) == 0
    assert load_snapshot(target).counts()["Node"] == 1


@pytest.mark.parametrize("where", ["missing-dir/prod.json", "a-directory"])
def test_snapshot_to_a_path_it_cannot_write_is_refused_before_asking_the_cluster(where: str, use_fake: list[FakeRunner],
                                                                                tmp_path: Path,
                                                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a-directory").mkdir()
    target = tmp_path / where
    assert main(["cluster", "snapshot", "--output-file", str(target), "--force"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: OUTPUT_INVALID: {target}: ") and "Traceback" not in err
    assert use_fake == []
