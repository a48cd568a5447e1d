"""Clusters by name: the strict clusters file, the kubeconfig fallback, ``lens cluster list``, ``--cluster`` and the fleet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_d_lens.cli.app import main
from llm_d_lens.cluster import source as source_module
from llm_d_lens.cluster.clusters import CONTEXTS_ARGV, default_path, load, load_file
from llm_d_lens.cluster.errors import ClustersFileInvalid, ClusterUnknown
from llm_d_lens.testing.cluster import as_list, node, pod
from llm_d_lens.serving import inventories as cache
from llm_d_lens.testing.fake_runner import FakeRunner

VERSION = ["kubectl", "version", "-o", "json"]
NODES = ["kubectl", "get", "nodes", "-o", "json"]
PODS = ["kubectl", "get", "pods", "--all-namespaces", "-o", "json"]
DRA = ["kubectl", "get", "resourceslices.resource.k8s.io", "-o", "json"]
NO_TYPE = 'error: the server doesn\'t have a resource type "x"\n'


@pytest.fixture(autouse=True)
def no_user_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Never read the machine's own clusters file or environment."""
    monkeypatch.delenv("LENS_CLUSTERS", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    cache.forget()


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def snapshot(path: Path, gpus: int, allocated: int) -> Path:
    items = [node("n1", resources={"nvidia.com/gpu": str(gpus)})]
    if allocated:
        items.append(pod("p", "n1", limits={"nvidia.com/gpu": str(allocated)}))
    path.write_text(json.dumps(as_list(*items)), encoding="utf-8")
    return path


def invalid(path: Path) -> ClustersFileInvalid:
    with pytest.raises(ClustersFileInvalid) as caught:
        load_file(path)
    assert caught.value.details["file"] == str(path)
    return caught.value


# -- the file -------------------------------------------------------------------------------


def test_a_file_names_live_snapshot_and_demo_clusters_with_display_names_and_labels(tmp_path: Path) -> None:
    snapshot(tmp_path / "lab.json", 8, 0)
    path = write(tmp_path / "clusters.yaml", """
clusters:
  - name: us-east
    display_name: US East (H100)
    labels: {region: us-east-1, environment: prod}
    context: gke_prod_east
    kubeconfig: kube/prod.yaml
  - name: lab
    snapshot: lab.json
  - name: demo
    demo: true
""")
    found = load_file(path)
    assert found.names() == ["us-east", "lab", "demo"]
    east, lab, demo = found.clusters
    assert (east.kind, east.context, east.kubeconfig) == ("live", "gke_prod_east", str(tmp_path / "kube" / "prod.yaml"))
    assert east.display_name == "US East (H100)" and east.labels == {"region": "us-east-1", "environment": "prod"}
    assert lab.kind == "snapshot" and lab.snapshot == tmp_path / "lab.json" and lab.display_name == "lab"
    assert demo.kind == "demo" and demo.source().demo
    assert east.source(timeout=3).context == "gke_prod_east" and east.source(timeout=3).timeout == 3


@pytest.mark.parametrize(("text", "where", "says"), [
    ("clusters: []\n", "clusters", "non-empty list"),
    ("clusters:\n  - {name: a, demo: true}\nextra: 1\n", "extra", "unknown key"),
    ("clusters:\n  - {name: a, demo: true, region: eu}\n", "clusters[0].region", "unknown key"),
    ("clusters:\n  - {name: a, demo: true}\n  - {name: a, context: x}\n", "clusters[1].name", "already the name of clusters[0]"),
    ("clusters:\n  - {name: a, snapshot: gone.json}\n", "clusters[0].snapshot", "does not exist"),
    ("clusters:\n  - {name: a, context: x, demo: true}\n", "clusters[0]", "names context and demo"),
    ("clusters:\n  - {name: a}\n", "clusters[0]", "names none of context, snapshot or demo"),
    ("clusters:\n  - {name: a, demo: true, kubeconfig: k}\n", "clusters[0].kubeconfig", "goes with context"),
    ("clusters:\n  - {name: a b, demo: true}\n", "clusters[0].name", "no spaces or slashes"),
    ("clusters:\n  - {name: a, demo: true, labels: {tier: 1}}\n", "clusters[0].labels.tier", "must be a string"),
    ("clusters:\n  - {name: a, demo: 'yes'}\n", "clusters[0].demo", "true or false"),
    ("clusters:\n  - name: a\n    name: b\n    demo: true\n", "name", "appears twice"),
])
def test_a_bad_file_is_a_coded_error_naming_the_file_and_field(tmp_path: Path, text: str, where: str, says: str) -> None:
    path = write(tmp_path / "clusters.yaml", text)
    error = invalid(path)
    assert error.code == "CLUSTERS_FILE_INVALID"
    assert error.details["path"] == where
    assert says in error.message and str(path) in error.message


def test_an_unknown_name_lists_the_known_ones(tmp_path: Path) -> None:
    found = load_file(write(tmp_path / "c.yaml", "clusters:\n  - {name: a, demo: true}\n  - {name: b, demo: true}\n"))
    with pytest.raises(ClusterUnknown) as caught:
        found.get("c")
    assert caught.value.http_status == 404 and caught.value.details["known"] == ["a", "b"]


def test_without_a_file_the_kubeconfig_contexts_are_the_clusters(tmp_path: Path) -> None:
    fake = FakeRunner(kubeconfig="/home/me/.kube/config").reply(list(CONTEXTS_ARGV), stdout="prod\nstaging\n\n")
    found = load(runner=fake)
    assert found.origin == "kubeconfig" and found.names() == ["prod", "staging"]
    assert [(c.context, c.kubeconfig, c.kind) for c in found.clusters] == [
        ("prod", "/home/me/.kube/config", "live"), ("staging", "/home/me/.kube/config", "live")]
    assert fake.argvs() == [["kubectl", "--kubeconfig", "/home/me/.kube/config", *CONTEXTS_ARGV[1:]]]


def test_the_file_comes_from_the_flag_then_the_environment_then_the_default_path(tmp_path: Path) -> None:
    fallback = default_path()
    fallback.parent.mkdir(parents=True)
    write(fallback, "clusters:\n  - {name: from-default, demo: true}\n")
    env_file = write(tmp_path / "env.yaml", "clusters:\n  - {name: from-env, demo: true}\n")
    flag_file = write(tmp_path / "flag.yaml", "clusters:\n  - {name: from-flag, demo: true}\n")
    never = FakeRunner()  # no call is scripted: reading the kubeconfig would fail the test
    assert load(runner=never).names() == ["from-default"]
    assert load(env={"LENS_CLUSTERS": str(env_file), "XDG_CONFIG_HOME": str(tmp_path / "config")}, runner=never).names() == ["from-env"]
    assert load(flag_file, env={"LENS_CLUSTERS": str(env_file)}, runner=never).names() == ["from-flag"]
    assert never.calls == []


# -- the commands ---------------------------------------------------------------------------


@pytest.fixture
def fleet_file(tmp_path: Path) -> Path:
    snapshot(tmp_path / "lab.json", 8, 3)
    return write(tmp_path / "clusters.yaml", """
clusters:
  - {name: lab, snapshot: lab.json, labels: {region: eu}}
  - {name: prod, context: prod-ctx}
  - {name: down, context: down-ctx}
  - {name: demo, demo: true}
""")


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> dict[str, FakeRunner]:
    """One FakeRunner per context: prod answers (4 GPUs, 1 in use), down's API server does not."""
    made: dict[str, FakeRunner] = {}

    def make(source: Any) -> FakeRunner:
        fake = FakeRunner(context=source.context, kubeconfig=source.kubeconfig)
        if source.context == "prod-ctx":
            fake.reply(VERSION, json_body={"serverVersion": {"gitVersion": "v1.34.2", "major": "1", "minor": "34"}})
            fake.reply(NODES, json_body=as_list(node("g1", resources={"nvidia.com/gpu": "4"})))
            fake.reply(PODS, json_body=as_list(pod("p", "g1", limits={"nvidia.com/gpu": "1"})))
            fake.reply(["kubectl", "get", ...], returncode=1, stderr=NO_TYPE)
        else:
            fake.reply(["kubectl", ...], returncode=1,
                       stderr="The connection to the server down.example:6443 was refused - did you specify the right host or port?\n")
        made[source.context] = fake
        return fake

    monkeypatch.setattr(source_module, "make_runner", make)
    return made


def test_cluster_list_shows_every_cluster_with_reachability(fleet_file: Path, fakes: dict[str, FakeRunner],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "list", "--clusters", str(fleet_file), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {row["name"]: row for row in data["clusters"]}
    assert data["origin"] == str(fleet_file) and list(rows) == ["lab", "prod", "down", "demo"]
    assert {name: row["reachable"] for name, row in rows.items()} == {"lab": True, "prod": True, "down": False, "demo": True}
    assert rows["prod"]["detail"] == "Kubernetes v1.34.2"
    assert "connection to the server down.example:6443 was refused" in rows["down"]["detail"]
    assert rows["lab"]["labels"] == {"region": "eu"}
    assert fakes["prod-ctx"].argvs() == [["kubectl", "--context", "prod-ctx", *VERSION[1:]]]


def test_cluster_list_without_a_file_lists_the_kubeconfig_contexts(monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    def make(source: Any) -> FakeRunner:
        fake = FakeRunner(context=source.context, kubeconfig=source.kubeconfig)
        fake.reply(list(CONTEXTS_ARGV), stdout="a\nb\nc\n")
        fake.reply(VERSION, json_body={"serverVersion": {"gitVersion": f"v1.3{len(source.context or '')}.0"}})
        return fake

    monkeypatch.setattr(source_module, "make_runner", make)
    assert main(["cluster", "list"]) == 0
    out = capsys.readouterr().out
    assert "clusters from kubeconfig" in out
    for name in ("a", "b", "c"):
        assert any(line.split()[:2] == [name, "live"] for line in out.splitlines())


def test_inspect_by_name_reads_that_cluster(fleet_file: Path, fakes: dict[str, FakeRunner],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "inspect", "--clusters", str(fleet_file), "--cluster", "lab", "-o", "json"]) == 0
    lab = json.loads(capsys.readouterr().out)
    assert lab["source"]["kind"] == "snapshot" and lab["summary"]["total_gpu_count"] == 8 and lab["summary"]["allocated"] == 3
    assert main(["cluster", "inspect", "--clusters", str(fleet_file), "--cluster", "prod", "-o", "json"]) == 0
    prod = json.loads(capsys.readouterr().out)
    assert prod["source"] == {"kind": "live", "context": "prod-ctx", "kubeconfig": None}
    assert prod["summary"]["total_gpu_count"] == 4 and prod["summary"]["allocated"] == 1


def test_a_name_and_another_source_is_a_conflict_and_an_unknown_name_an_error(fleet_file: Path,
                                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "inspect", "--clusters", str(fleet_file), "--cluster", "lab", "--context", "x"]) == 1
    assert "CLUSTER_SOURCE_CONFLICT: --cluster lab names a cluster; drop --context" in capsys.readouterr().err
    assert main(["cluster", "inspect", "--clusters", str(fleet_file), "--cluster", "nope"]) == 1
    assert "CLUSTER_NOT_FOUND: no cluster named 'nope'" in capsys.readouterr().err
    assert main(["cluster", "snapshot", "--output-file", str(fleet_file.parent / "s.json"), "--clusters", str(fleet_file), "--cluster", "demo"]) == 1
    assert "LIVE_CLUSTER_NEEDED: cluster 'demo' is the demo" in capsys.readouterr().err


def test_a_bad_clusters_file_exits_1_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "c.yaml", "clusters:\n  - {name: a, snapshot: gone.json}\n")
    assert main(["cluster", "list", "--clusters", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: CLUSTERS_FILE_INVALID: {path}: clusters[0].snapshot: does not exist")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_the_fleet_totals_each_hardware_across_clusters_and_lists_the_unreadable_one(
        fleet_file: Path, fakes: dict[str, FakeRunner], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "inspect", "--all", "--clusters", str(fleet_file), "-o", "json"]) == 0
    fleet = json.loads(capsys.readouterr().out)
    members = {m["name"]: m for m in fleet["clusters"]}
    assert {name: m["ok"] for name, m in members.items()} == {"lab": True, "prod": True, "down": False, "demo": True}
    assert members["down"]["error"]["code"] == "COMMAND_FAILED"
    assert "refused" in members["down"]["error"]["message"]
    # each cluster on its own, as `inspect --cluster` reads it: the fleet must be their sum
    alone = {}
    for name in ("lab", "prod", "demo"):
        assert main(["cluster", "inspect", "--clusters", str(fleet_file), "--cluster", name, "-o", "json"]) == 0
        alone[name] = {b["profile_id"]: b for b in json.loads(capsys.readouterr().out)["vendors"]}
    nvidia = next(h for h in fleet["hardware"] if h["profile_id"] == "nvidia")
    assert [share["cluster"] for share in nvidia["clusters"]] == ["lab", "prod", "demo"]
    for key in ("devices", "allocated", "available"):
        assert nvidia[key] == sum(alone[name]["nvidia"][key] for name in alone)
    assert nvidia["vram_bytes"] == sum(alone[name]["nvidia"]["vram"]["total_bytes"] for name in alone)
    demo_accelerators = sum(b["devices"] for b in alone["demo"].values() if b["accelerator"])
    assert fleet["totals"]["devices"] == 8 + 4 + demo_accelerators
    assert fleet["totals"]["clusters"] == 4 and fleet["totals"]["clusters_read"] == 3


def test_the_fleet_table_names_the_unreadable_cluster(fleet_file: Path, fakes: dict[str, FakeRunner],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "inspect", "--all", "--clusters", str(fleet_file)]) == 0
    out = capsys.readouterr().out
    assert "3/4 clusters read" in out
    down = next(line for line in out.splitlines() if line.startswith("down "))
    assert "COMMAND_FAILED" in down


@pytest.mark.parametrize("argv", [
    ["cluster", "inspect"],
    ["cluster", "snapshot", "--output-file", "{tmp}/s.json"],
    ["driver", "plan", "--device-class", "gpu.nvidia.com"],
    ["driver", "status"],
    ["driver", "install", "--hardware", "cpu", "--dry-run"],
    ["preflight", "--hardware", "cpu"],
    ["deploy", "render", "--guide", "g", "--hardware", "nvidia"],
    ["incluster", "check"],
    ["plan", "--model", "llama-3.2-1b", "--no-predict"],
    ["plan", "discover", "--hardware", "nvidia", "--node", "n1"],
])
def test_every_command_that_reads_a_cluster_takes_it_by_name(argv: list[str], tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    clusters = write(tmp_path / "clusters.yaml", "clusters:\n  - {name: lab, demo: true}\n")
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main([*args, "--clusters", str(clusters), "--cluster", "nope"]) == 1
    err = capsys.readouterr().err
    assert "CLUSTER_NOT_FOUND: no cluster named 'nope'" in err and "known: lab" in err
