"""Workload profiles: every validation rule with its message, the search path, the commands."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_d_lens.cli.app import main as lens_main
from llm_d_lens.evaluate.errors import ProfileDirMissing, WorkloadProfileInvalid, WorkloadProfileNotFound
from llm_d_lens.evaluate.flags import to_flags
from llm_d_lens.evaluate.profiles import SearchPath, builtin_dir, load_file

REPO_ROOT = Path(__file__).resolve().parents[2]

# Two machines of eight GPUs: 16 GPUs is the bound coverage is checked against.
BASE: dict[str, Any] = {
    "description": "two machines, one tensor-parallel pool each",
    "hardware": {"machines": 2, "gpus_per_machine": 8, "sku": "test-sku"},
    "serving": {"mode": "aggregated", "model": "org/model", "parallelism": {"tensor": 8}},
    "deployment": {"external": True},
    "endpoint": {"host": "frontend", "port": 8000},
    "otel_endpoint": "http://collector:4317",
    "coverage": {"hosts": 2, "gpus": 16, "communicators": 1},
    "timeouts": {"workload": 600, "metrics_available": 120, "quiesce": 30},
    "expected_metrics": "nccl-profiler",
}


def write_profile(directory: Path, name: str, data: dict[str, Any] | str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def changed(**edits: Any) -> dict[str, Any]:
    """BASE with dotted-path edits; the value ``DELETE`` removes the key."""
    data = copy.deepcopy(BASE)
    for dotted, value in edits.items():
        *parents, last = dotted.split("__")
        target = data
        for key in parents:
            target = target.setdefault(key, {})
        if value is DELETE:
            target.pop(last, None)
        else:
            target[last] = value
    return data


DELETE = object()


def issues_of(tmp_path: Path, data: dict[str, Any] | str, name: str = "p") -> list[str]:
    path = write_profile(tmp_path, name, data)
    with pytest.raises(WorkloadProfileInvalid) as caught:
        load_file(path)
    assert caught.value.name == name
    assert caught.value.message.startswith(f"workload profile {name!r} ({path}): ")
    return [str(issue) for issue in caught.value.issues]


def test_the_base_fixture_is_valid(tmp_path):
    loaded = load_file(write_profile(tmp_path, "p", BASE))
    assert loaded.name == "p"
    assert loaded.profile.hardware.total_gpus == 16
    assert loaded.compose_path() is None


# -- every rule, with its message ----------------------------------------------------------------

RULES = [
    pytest.param(changed(coverage__gpus=99), ["coverage.gpus: 99 exceeds the 16 GPUs the hardware provides"], id="gpus-bound"),
    pytest.param(changed(coverage__hosts=3), ["coverage.hosts: 3 exceeds the 2 machines the hardware provides"], id="hosts-bound"),
    pytest.param(changed(hardware__machines=1, coverage__hosts=2, coverage__gpus=8),
                 ["coverage.hosts: 2 exceeds the 1 machine the hardware provides"], id="hosts-bound-singular"),
    pytest.param(changed(coverage__gpus=0), ["coverage.gpus: must be positive (value: 0)"], id="positive-count"),
    pytest.param(changed(hardware__gpus_per_machine=-1), ["hardware.gpus_per_machine: must be positive (value: -1)"], id="positive-gpus"),
    pytest.param(changed(timeouts__quiesce=0), ["timeouts.quiesce: must be positive (value: 0)"], id="positive-timeout"),
    pytest.param(changed(timeouts__workload="600"), ['timeouts.workload: must be a number (value: "600")'], id="timeout-type"),
    pytest.param(changed(endpoint__port=70000), ["endpoint.port: 70000 is not a valid port (1-65535)"], id="port-range"),
    pytest.param(changed(endpoint__port="8000"), ['endpoint.port: must be an integer (value: "8000")'], id="port-type"),
    pytest.param(changed(coverage__gpu=4),
                 ["coverage.gpu: unknown key (known keys: hosts, gpus, communicators, source)"], id="unknown-key"),
    pytest.param(changed(coverage__source={"metric": "m", "labels": {"hostnme": "h"}}),
                 ["coverage.source.labels.hostnme: unknown key (known keys: host, gpu_pci_bus_id, gpu_uuid, rank, "
                  "local_rank, communicator)"], id="unknown-nested-key"),
    pytest.param(changed(extra=1), ["extra: unknown key (known keys: description, hardware, serving, deployment, endpoint, "
                                    "otel_endpoint, coverage, timeouts, expected_metrics, benchmark_options)"], id="unknown-top-key"),
    pytest.param(changed(timeouts__quiesce=DELETE), ["timeouts.quiesce: is required"], id="required"),
    pytest.param(changed(serving__mode="agg"),
                 ["serving.mode: must be one of 'aggregated' or 'disaggregated' (value: \"agg\")"], id="literal"),
    # the compose file named is the profile itself: it exists, so only the two-sources rule fires
    pytest.param(changed(deployment={"external": True, "compose_file": "p.yaml"}),
                 ["deployment: name exactly one source, compose_file or external: true, not both"], id="two-sources"),
    pytest.param(changed(deployment={}), ["deployment: name exactly one source, compose_file or external: true"], id="no-source"),
    pytest.param(changed(deployment={"external": False}),
                 ["deployment: name exactly one source, compose_file or external: true"], id="external-false"),
    pytest.param(changed(endpoint={"host": "f", "port": 8000, "base_url": "http://f:8000"}),
                 ["endpoint: give either host and port, or base_url, not both"], id="two-endpoints"),
    pytest.param(changed(endpoint={}), ["endpoint: give either host and port, or base_url"], id="no-endpoint"),
    pytest.param(changed(endpoint={"host": "f"}), ["endpoint.port: is required with endpoint.host"], id="host-alone"),
    pytest.param(changed(endpoint={"port": 8000}), ["endpoint.host: is required with endpoint.port"], id="port-alone"),
    pytest.param(changed(endpoint={"base_url": "frontend:8000"}),
                 ["endpoint.base_url: 'frontend:8000' is not an http:// or https:// URL"], id="base-url"),
    pytest.param(changed(serving={"mode": "disaggregated", "model": "m", "decode": {"replicas": 1}}),
                 ["serving: a disaggregated profile declares both prefill and decode; missing: prefill"], id="disagg-missing"),
    pytest.param(changed(serving={"mode": "disaggregated", "model": "m", "parallelism": {"tensor": 2},
                                  "prefill": {}, "decode": {}}),
                 ["serving.parallelism: a disaggregated profile sets parallelism in prefill and decode"], id="disagg-top-level"),
    pytest.param(changed(serving={"mode": "aggregated", "model": "m", "prefill": {}, "decode": {}}),
                 ["serving: an aggregated profile declares neither prefill nor decode; found: prefill, decode"], id="agg-pools"),
    pytest.param(changed(expected_metrics="nccl"), ["expected_metrics: 'nccl' names no metric list; lists: nccl-profiler"],
                 id="metric-list"),
    pytest.param(changed(deployment={"compose_file": "missing/compose.yml"}), ["COMPOSE"], id="compose-missing"),
    pytest.param(changed(hardware__accelerator="nvidai"), ["ACCELERATOR"], id="hardware-unknown"),
    pytest.param(changed(hardware__accelerator="rocm", hardware__access_mode="default"),
                 ["hardware.access_mode: 'default' is not an access mode of hardware 'amd' (modes: plugin, dra)"], id="mode-unknown"),
    pytest.param(changed(hardware__access_mode="dra"),
                 ["hardware.access_mode: needs hardware.accelerator to say whose access mode it is"], id="mode-without-hardware"),
    pytest.param(changed(benchmark_options={"num prompts": 64}),
                 ["benchmark_options.num prompts: is not a flag name (letters, digits, '_' and '-')"], id="flag-name"),
    pytest.param(changed(benchmark_options={"percentiles": [50, 99]}),
                 ["benchmark_options.percentiles: must be a string, number, true, false or null (value: [50, 99])"], id="flag-value"),
    pytest.param(changed(coverage__source={"metric": "bad-name"}),
                 ["coverage.source.metric: 'bad-name' is not a Prometheus metric name"], id="metric-name"),
    pytest.param(changed(coverage__source={"labels": {"host": "host.name"}}),
                 ["coverage.source.labels.host: 'host.name' is not a Prometheus label name"], id="label-name"),
]


@pytest.mark.parametrize(("data", "expected"), RULES)
def test_each_rule_reports_the_profile_the_path_and_the_problem(tmp_path, data, expected):
    if expected == ["COMPOSE"]:
        expected = [f"deployment.compose_file: missing/compose.yml does not exist relative to the profile "
                    f"(looked for {(tmp_path / 'missing' / 'compose.yml').resolve()})"]
    if expected == ["ACCELERATOR"]:
        from llm_d_lens.hardware.registry import get_registry

        nearest = ", ".join(get_registry().nearest("nvidai"))
        assert "nvidia" in nearest
        expected = [f"hardware.accelerator: no registered hardware matches 'nvidai'; nearest registered names: {nearest}"]
    assert issues_of(tmp_path, data) == expected


def test_several_field_problems_are_reported_together(tmp_path):
    data = changed(coverage__gpus=0, endpoint__port=0, timeouts__workload=-5)
    assert issues_of(tmp_path, data) == [
        "endpoint.port: 0 is not a valid port (1-65535)",
        "coverage.gpus: must be positive (value: 0)",
        "timeouts.workload: must be positive (value: -5)",
    ]


def test_several_cross_field_problems_are_reported_together(tmp_path):
    data = changed(coverage__gpus=99, deployment={}, endpoint={})
    assert issues_of(tmp_path, data) == [
        "coverage.gpus: 99 exceeds the 16 GPUs the hardware provides",
        "deployment: name exactly one source, compose_file or external: true",
        "endpoint: give either host and port, or base_url",
    ]


def test_a_key_given_twice_is_an_error_not_a_silent_override(tmp_path):
    text = yaml.safe_dump(BASE, sort_keys=False) + "description: again\n"
    assert issues_of(tmp_path, text) == ["description: appears twice; the second value would silently replace the first"]


def test_yaml_that_is_not_a_mapping_is_named(tmp_path):
    assert issues_of(tmp_path, "- a\n- b\n") == ["must be a mapping of keys to values"]
    assert issues_of(tmp_path, "a: [\n")[0].startswith("is not valid YAML: ")


def test_the_compose_path_resolves_relative_to_the_profile_not_the_working_directory(tmp_path, monkeypatch):
    directory = tmp_path / "env" / "profiles"
    (tmp_path / "env" / "deploy").mkdir(parents=True)
    (tmp_path / "env" / "deploy" / "compose.yml").write_text("services: {}\n")
    path = write_profile(directory, "tier", changed(deployment={"compose_file": "../deploy/compose.yml"}))
    monkeypatch.chdir(REPO_ROOT)
    assert load_file(path).compose_path() == (tmp_path / "env" / "deploy" / "compose.yml").resolve()


def test_a_disaggregated_profile_yields_both_pools(tmp_path):
    data = changed(serving={"mode": "disaggregated", "model": "m",
                            "prefill": {"replicas": 2, "parallelism": {"tensor": 1}},
                            "decode": {"replicas": 1, "parallelism": {"tensor": 4, "data": 2, "data_local": 2}}},
                   coverage__communicators=2)
    pools = load_file(write_profile(tmp_path, "pd", data)).profile.serving.pools()
    assert {role: (p.replicas, p.parallelism.accelerators_per_pod) for role, p in pools.items()} == {
        "prefill": (2, 1), "decode": (1, 8)}


# -- the search path --------------------------------------------------------------------------


def test_the_builtin_default_is_found_and_valid():
    search = SearchPath.of()
    assert list(search.effective()) == ["default"]
    loaded = search.load()  # no name: default
    assert loaded.name == "default"
    assert loaded.path == (builtin_dir() / "default.yaml").resolve()
    assert loaded.profile.deployment.external is True


def test_later_directories_override_earlier_ones_and_the_builtin(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    write_profile(first, "default", changed(description="from first"))
    write_profile(first, "tier", changed(description="tier from first"))
    write_profile(second, "tier", changed(description="tier from second"))
    search = SearchPath.of([first, second])
    assert search.directories == [builtin_dir(), first.resolve(), second.resolve()]
    assert search.load().profile.description == "from first"
    assert search.load("tier").profile.description == "tier from second"
    effective = search.effective()
    assert effective["default"].overrides == (builtin_dir() / "default.yaml",)
    assert effective["tier"].overrides == (first.resolve() / "tier.yaml",)
    # order matters: the other way round, first wins
    assert SearchPath.of([second, first]).load("tier").profile.description == "tier from first"


def test_an_unknown_name_fails_at_once_and_lists_what_was_found(tmp_path):
    write_profile(tmp_path, "tier", BASE)
    with pytest.raises(WorkloadProfileNotFound) as caught:
        SearchPath.of([tmp_path]).load("tire")
    assert caught.value.message == (f"no workload profile named 'tire'; profiles found: default, tier "
                                    f"(searched: {builtin_dir()}, {tmp_path.resolve()})")


def test_a_missing_profile_dir_is_an_error(tmp_path):
    with pytest.raises(ProfileDirMissing) as caught:
        SearchPath.of([tmp_path / "nope"])
    assert caught.value.message == f"--profile-dir {tmp_path / 'nope'}: no such directory"


# -- benchmark_options to flags -----------------------------------------------------------------


def test_flags_follow_the_conventions_without_knowing_the_flags():
    options = {"num_prompts": 64, "ignore_eos": True, "dataset_name": "random", "seed": None, "request_rate": 2.5,
               "trust_remote_code": False, "temperature": 0.0, "save-result": True, "result_filename": "a b.json"}
    assert to_flags(options) == ["--num-prompts", "64", "--ignore-eos", "--dataset-name", "random",
                                 "--request-rate", "2.5", "--temperature", "0", "--save-result",
                                 "--result-filename", "a b.json"]


def test_null_drops_a_flag_a_profile_would_otherwise_get():
    assert to_flags({"num_prompts": None}) == []


# -- the commands, in process and as `python -m` -------------------------------------------------


def run_module(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "llm_d_lens.cli", "profiles", *args], capture_output=True,
                          text=True, cwd=REPO_ROOT, timeout=60)


def test_compose_file_prints_an_absolute_path(tmp_path, capsys):
    (tmp_path / "compose.yml").write_text("services: {}\n")
    write_profile(tmp_path, "local", changed(deployment={"compose_file": "compose.yml"}))
    assert lens_main(["profiles", "compose-file", "local", "--profile-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"{(tmp_path / 'compose.yml').resolve()}\n"


def test_compose_file_prints_nothing_for_an_external_profile(tmp_path, capsys):
    write_profile(tmp_path, "remote", BASE)
    assert lens_main(["profiles", "compose-file", "remote", "--profile-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out == ""


def test_compose_file_through_python_m(tmp_path):
    (tmp_path / "compose.yml").write_text("services: {}\n")
    write_profile(tmp_path, "local", changed(deployment={"compose_file": "compose.yml"}))
    write_profile(tmp_path, "remote", BASE)

    local = run_module("compose-file", "local", "--profile-dir", str(tmp_path))
    assert (local.returncode, local.stdout, local.stderr) == (0, f"{(tmp_path / 'compose.yml').resolve()}\n", "")

    remote = run_module("compose-file", "remote", "--profile-dir", str(tmp_path))
    assert (remote.returncode, remote.stdout, remote.stderr) == (0, "", "")

    unknown = run_module("compose-file", "nope", "--profile-dir", str(tmp_path))
    assert unknown.returncode == 1
    assert unknown.stdout == ""
    assert unknown.stderr == (f"error: WORKLOAD_PROFILE_NOT_FOUND: no workload profile named 'nope'; profiles found: "
                              f"default, local, remote (searched: {builtin_dir()}, {tmp_path.resolve()})\n")


def test_list_through_python_m(tmp_path):
    write_profile(tmp_path, "tier", BASE)
    write_profile(tmp_path, "broken", changed(coverage__gpus=99))
    result = run_module("list", "--profile-dir", str(tmp_path), "--output", "json")
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert list(rows) == ["broken", "default", "tier"]
    assert rows["tier"]["description"] == BASE["description"]
    assert rows["broken"]["valid"] is False and rows["broken"]["problems"] == 1
    assert rows["default"]["builtin"] is True


def test_validate_checks_every_profile_and_reports_all_errors(tmp_path):
    write_profile(tmp_path, "good", BASE)
    write_profile(tmp_path, "bad", changed(coverage__gpus=99, endpoint={}))
    write_profile(tmp_path, "worse", changed(serving__mode="agg"))
    result = run_module("validate", "--profile-dir", str(tmp_path), "--output", "json")
    assert result.returncode == 1
    by_name = {r["name"]: r for r in json.loads(result.stdout)}
    assert [by_name[n]["valid"] for n in ("default", "bad", "good", "worse")] == [True, False, True, False]
    assert by_name["bad"]["issues"] == [
        {"path": "coverage.gpus", "message": "99 exceeds the 16 GPUs the hardware provides"},
        {"path": "endpoint", "message": "give either host and port, or base_url"},
    ]
    assert by_name["worse"]["issues"] == [
        {"path": "serving.mode", "message": "must be one of 'aggregated' or 'disaggregated' (value: \"agg\")"}]


def test_validate_passes_on_good_profiles(tmp_path, capsys):
    write_profile(tmp_path, "good", BASE)
    assert lens_main(["profiles", "validate", "--profile-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "✓ default" in out and "✓ good" in out


def test_flags_command_prints_shell_quoted_flags(tmp_path, capsys):
    write_profile(tmp_path, "p", changed(benchmark_options={"num_prompts": 64, "ignore_eos": True, "seed": None,
                                                            "result_filename": "a b.json"}))
    assert lens_main(["profiles", "flags", "p", "--profile-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "--num-prompts 64 --ignore-eos --result-filename 'a b.json'\n"


def test_an_invalid_profile_selected_by_name_fails_with_its_problems(tmp_path, capsys):
    write_profile(tmp_path, "bad", changed(coverage__gpus=99))
    assert lens_main(["profiles", "compose-file", "bad", "--profile-dir", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"error: WORKLOAD_PROFILE_INVALID: workload profile 'bad' ({tmp_path / 'bad.yaml'}): 1 problem\n"
                            f"  coverage.gpus: 99 exceeds the 16 GPUs the hardware provides\n")


def test_a_compose_file_that_is_a_directory_is_said_to_be_one(tmp_path):
    """'does not exist' would send a user looking for a directory that is there."""
    (tmp_path / "deploy").mkdir()
    data = changed(deployment={"compose_file": "deploy"})
    assert issues_of(tmp_path, data) == [
        f"deployment.compose_file: deploy is a directory, not a compose file (at {(tmp_path / 'deploy').resolve()})"]


# -- parallelism against the hardware block ----------------------------------------------------

TWO_GPUS = {"hardware__machines": 1, "hardware__gpus_per_machine": 2, "coverage__hosts": 1, "coverage__gpus": 2}


def disaggregated(prefill: dict[str, Any], decode: dict[str, Any]) -> dict[str, Any]:
    return {"mode": "disaggregated", "model": "m", "prefill": prefill, "decode": decode}


FOUR_BY_TWO = {"hardware__machines": 2, "hardware__gpus_per_machine": 4, "coverage__gpus": 8}
FITS = "serving: the pools need {need} accelerators in whole pods ({wanted}), which do not fit on {where}"
ON_TWO_EIGHTS = "2 machines of 8 GPUs (hardware.machines, hardware.gpus_per_machine)"

PARALLELISM = [
    pytest.param(changed(serving__parallelism={"tensor": 4}, **TWO_GPUS),
                 ["serving.parallelism.tensor: 4 needs 4 accelerators for one engine (tensor 4), more than the 2 GPUs "
                  "the hardware has (1 machine × 2, hardware.machines × hardware.gpus_per_machine)"], id="tp-over-hardware"),
    pytest.param(changed(serving__parallelism={"tensor": 2, "pipeline": 2}, **TWO_GPUS),
                 ["serving.parallelism.pipeline: 2 needs 4 accelerators for one engine (tensor 2 × pipeline 2), more "
                  "than the 2 GPUs the hardware has (1 machine × 2, hardware.machines × hardware.gpus_per_machine)"],
                 id="tp-pp-over-hardware"),
    pytest.param(changed(serving__parallelism={"tensor": 6}, **FOUR_BY_TWO),
                 ["serving.parallelism.tensor: 6 makes an engine of 6 accelerators (tensor 6), which spans machines but "
                  "is not a whole number of 4-GPU machines (hardware.gpus_per_machine)"], id="span-partial-machine"),
    pytest.param(changed(serving__parallelism={"tensor": 8, "data": 2, "data_local": 2}, **FOUR_BY_TWO),
                 ["serving.parallelism.data_local: 2: an engine of 8 accelerators spans machines, so a pod runs one "
                  "data-parallel rank (data_local 1)"], id="span-with-local-ranks"),
    pytest.param(changed(serving__parallelism={"tensor": 8}, serving__replicas=2, **FOUR_BY_TWO),
                 [FITS.format(need=16, wanted="decode: 2 × 8 across 2 machines",
                              where="2 machines of 4 GPUs (hardware.machines, hardware.gpus_per_machine)")],
                 id="spanning-replicas-over-hardware"),
    pytest.param(changed(serving__parallelism={"tensor": 4, "data": 4, "data_local": 4}),
                 ["serving.parallelism.data_local: 4 puts 16 accelerators in one pod (tensor 4 × data_local 4), more "
                  "than the 8 GPUs of one machine (hardware.gpus_per_machine); a pod runs on one machine"], id="dp-local-over-machine"),
    pytest.param(changed(serving__parallelism={"tensor": 2, "data": 3, "data_local": 2}),
                 ["serving.parallelism.data_local: 2 does not divide data 3: every pod of the pool runs the same number "
                  "of data-parallel ranks"], id="dp-uneven"),
    pytest.param(changed(serving__replicas=3), [FITS.format(need=24, wanted="decode: 3 × 8", where=ON_TWO_EIGHTS)],
                 id="replicas-over-hardware"),
    pytest.param(changed(serving=disaggregated({"replicas": 3, "parallelism": {"tensor": 4}},
                                               {"replicas": 1, "parallelism": {"tensor": 8}})),
                 [FITS.format(need=20, wanted="prefill: 3 × 4; decode: 1 × 8", where=ON_TWO_EIGHTS)], id="pools-over-hardware"),
    # 16 devices fit 16 by count, but a 4-device pod has no machine left once each holds a 6-device one
    pytest.param(changed(serving=disaggregated({"replicas": 2, "parallelism": {"tensor": 6}},
                                               {"replicas": 1, "parallelism": {"tensor": 4}})),
                 [FITS.format(need=16, wanted="prefill: 2 × 6; decode: 1 × 4", where=ON_TWO_EIGHTS)], id="whole-pods-only"),
    # ... while 6 + 3 + 3 places: 6 on one machine, both 3s on the other
    pytest.param(changed(serving=disaggregated({"replicas": 1, "parallelism": {"tensor": 6}},
                                               {"replicas": 2, "parallelism": {"tensor": 3}})), [], id="packs-by-machine"),
    # the seed's cross-node tier: one tensor-parallel group straddling two machines of four
    pytest.param(changed(serving__parallelism={"tensor": 8}, **FOUR_BY_TWO), [], id="tp-straddles-machines"),
]


@pytest.mark.parametrize(("data", "expected"), PARALLELISM)
def test_parallelism_is_checked_against_the_hardware_block(tmp_path, data, expected):
    if not expected:
        assert load_file(write_profile(tmp_path, "p", data)).profile.serving.pools()
        return
    assert issues_of(tmp_path, data) == expected


def test_wide_data_parallel_pools_span_machines_a_pod_at_a_time(tmp_path):
    """data 16 with data_local 8: two pods of eight, one per machine — the wide-EP shape fits exactly."""
    loaded = load_file(write_profile(tmp_path, "p", changed(serving__parallelism={"tensor": 1, "data": 16, "data_local": 8})))
    assert loaded.profile.serving.pools()["decode"].parallelism.pods_per_replica == 2
    issues = issues_of(tmp_path, changed(serving__parallelism={"tensor": 1, "data": 24, "data_local": 8}), "q")
    assert issues == [FITS.format(need=24, wanted="decode: 3 × 8", where=ON_TWO_EIGHTS)]


def test_validate_refuses_tensor_parallel_beyond_the_hardware_naming_file_field_and_value(tmp_path, capsys):
    path = write_profile(tmp_path, "tp4", changed(serving__parallelism={"tensor": 4}, **TWO_GPUS))
    assert lens_main(["profiles", "validate", "--profile-dir", str(tmp_path), "-o", "json"]) == 1
    row = next(r for r in json.loads(capsys.readouterr().out) if r["name"] == "tp4")
    assert row["path"] == str(path) and row["valid"] is False
    assert [i["path"] for i in row["issues"]] == ["serving.parallelism.tensor"]
    assert row["issues"][0]["message"].startswith("4 needs 4 accelerators for one engine (tensor 4)")
    assert lens_main(["profiles", "flags", "tp4", "--profile-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: WORKLOAD_PROFILE_INVALID: workload profile 'tp4' ({path}): 1 problem\n")
    assert "  serving.parallelism.tensor: 4 needs 4 accelerators for one engine" in err
