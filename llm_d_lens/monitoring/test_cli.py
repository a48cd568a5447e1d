"""``lens telemetry``: the real entry point against a real Prometheus, and its errors."""

from __future__ import annotations

import json

import pytest
import yaml

from llm_d_lens.cli.app import main
from llm_d_lens.testing.telemetry_pages import TESTDATA, needs_prometheus, sample_text, shared
from llm_d_lens.testing.prometheus import BASE_TIMESTAMP, free_port

AT = str(BASE_TIMESTAMP)


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["telemetry", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@needs_prometheus
def test_devices_as_json(prometheus, capsys):
    code, out, _ = run(capsys, "devices", "--prometheus", prometheus.url, "--hardware", "nvidia", "--node", "gpu-node-01",
                       "--at", AT, "-o", "json")
    assert code == 0
    report = json.loads(out)
    # the inventory, 16 quantities and the targets, in one query
    assert report["queries"] == 2 and report["hardware"] == ["nvidia"]
    assert [(d["device"], d["power_watts"], d["memory_total_bytes"]) for d in report["devices"]] == [
        ("0", 612.35, (73421 + 7557 + 581) * 2**20), ("1", 71.2, (80978 + 581) * 2**20)]


@needs_prometheus
def test_devices_as_a_table_with_an_iso_time(prometheus, capsys):
    code, out, _ = run(capsys, "devices", "--prometheus", prometheus.url, "--hardware", "cuda", "--node", "gpu-node-01",
                       "--at", "2026-01-01T00:00:00Z", "-o", "wide")
    assert code == 0
    assert "612.4" in out and "48.21 MJ" in out and " 87 " in out and "UTIL %" in out
    assert "llm-serving/vllm-llama-3-1-8b-5f7d9c6b8-q2xkz" in out and "unattributed" in out and "idle" not in out


@needs_prometheus
def test_devices_joined_with_cluster_objects_from_a_file(prometheus, capsys):
    code, out, _ = run(capsys, "devices", "--prometheus", prometheus.url, "--hardware", "intel-xpu",
                       "--cluster", str(shared("clusters", "dra-intel-cpu.json")), "--at", AT, "-o", "yaml")
    assert code == 0
    report = yaml.safe_load(out)
    owners = {f"{d['node']}/{d['device']}": d["attribution"]["pod"] for d in report["devices"]}
    assert owners["xpu-max1550-01/0000:29:00.0"] == "vllm-xpu-llama-3-1-70b-0"
    assert owners["xpu-max1550-01/0000:ca:00.0"] is None
    assert {p["pod"]: p["allocations"][0]["status"] for p in report["pods"]} == {
        "vllm-xpu-llama-3-1-70b-0": "attributed", "vllm-xpu-qwen2-5-32b-59d7f8c6b4-k7wqz": "attributed",
        "vllm-xpu-llama-3-1-8b-7f8b9c6d5-p2mxr": "unavailable"}  # its Max 1100 node has no exporter in this Prometheus
    node_only = yaml.safe_load(run(capsys, "devices", "--prometheus", prometheus.url, "--hardware", "intel-xpu", "--node",
                                   "xpu-max1550-01", "--cluster", str(shared("clusters", "dra-intel-cpu.json")),
                                   "--at", AT, "-o", "yaml")[1])
    assert len(node_only["devices"]) == 8
    assert sorted(p["pod"] for p in node_only["pods"]) == ["vllm-xpu-llama-3-1-70b-0", "vllm-xpu-qwen2-5-32b-59d7f8c6b4-k7wqz"]


@needs_prometheus
def test_pods_as_json(prometheus, capsys):
    code, out, _ = run(capsys, "pods", "--prometheus", prometheus.url, "--namespace", "llm-serving", "--at", AT, "-o", "json")
    assert code == 0
    (pod,) = [p for p in json.loads(out)["pods"] if p["pod"] == "vllm-llama-3-1-8b-5f7d9c6b8-q2xkz"]
    assert (pod["kv_cache_usage_ratio"], pod["requests_running"], pod["requests_waiting"]) == (0.4375, 14, 3)


@needs_prometheus
def test_pods_as_a_table(prometheus, capsys):
    code, out, _ = run(capsys, "pods", "--prometheus", prometheus.url, "--hardware", "amd", "--pod",
                       "vllm-llama-3-1-8b-5f7d9c6b8-q2xkz", "--at", AT)
    assert code == 0 and "KV CACHE %" in out and " 43.8 " in out and "688.0" in out  # 0.4375; 688 W on its one MI300X
    code, out, _ = run(capsys, "pods", "--prometheus", prometheus.url, "--hardware", "cpu", "--at", AT)
    assert code == 0 and " 43.8 " in out


def test_a_snapshot_file_needs_no_prometheus(capsys, tmp_path):
    page = tmp_path / "dcgm.prom"
    page.write_text(sample_text("dcgm-exporter.prom"))
    code, out, _ = run(capsys, "devices", "--snapshot", str(page), "--hardware", "nvidia", "-o", "json")
    assert code == 0 and [d["temperature_celsius"] for d in json.loads(out)["devices"]] == [63, 32]


def test_tiles_are_shown_folded(capsys):
    code, out, _ = run(capsys, "devices", "--snapshot", str(TESTDATA / "xpu-max1550-tiles.prom"), "--hardware", "xpu")
    assert code == 0 and "0000:29:00.0 ×2" in out


def test_queries_lists_the_inventory_and_one_per_quantity(capsys):
    code, out, _ = run(capsys, "queries", "--hardware", "amd", "-o", "json")
    assert code == 0
    assert list(json.loads(out)["amd"]) == ["inventory", "utilization", "memory_used", "memory_total", "power", "energy",
                                           "temperature", "tensor_activity", "memory_temperature", "memory_bandwidth",
                                           "ecc_corrected", "ecc_uncorrected", "pcie_replays", "device_healthy",
                                           "core_clock", "memory_clock", "power_throttle", "thermal_throttle", "link_data",
                                           "sentinels", "targets"]


@needs_prometheus
def test_the_combined_query_answers_every_part_the_parts_answer(prometheus, capsys):
    """``--combined`` prints the one query a refresh sends; its answer, taken apart, is each part's own answer."""
    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.monitoring.accelerator.plan import plan_for
    from llm_d_lens.monitoring.accelerator.refresh import parts as finished, refresh_query, row_labels, split
    from llm_d_lens.monitoring.accelerator.tilerows import TileRows
    from llm_d_lens.prometheus.answers import converted_rows

    code, out, _ = run(capsys, "queries", "--hardware", "amd", "--combined", "-o", "json")
    assert code == 0
    (expression,) = json.loads(out)["amd"].values()
    _, out, _ = run(capsys, "queries", "--hardware", "amd", "-o", "json")
    parts = json.loads(out)["amd"]
    plan = plan_for(get_registry().get("amd"))
    query = refresh_query(plan, targets=True)
    assert expression == query.promql  # what is printed is what a refresh sends
    rows = converted_rows({"resultType": "vector", "result": prometheus.query(expression)}, row_labels(query))
    answered = {name: rows.samples() if isinstance(rows, TileRows) else rows
                for name, rows in finished(plan, query, split(query, rows)).items()}
    assert list(answered) == list(parts)
    for name, promql in parts.items():
        assert [(dict(r.labels), repr(r.value)) for r in answered[name]] == \
            [(r["metric"], repr(float(r["value"][1]))) for r in prometheus.query(promql)], name
    assert sum(map(len, answered.values())) > len(parts)


def test_prometheus_down_is_one_line_and_exit_1(capsys):
    url = f"http://127.0.0.1:{free_port()}"
    code, _, err = run(capsys, "devices", "--prometheus", url)
    assert code == 1
    assert err.startswith(f"error: PROMETHEUS_UNREACHABLE: cannot reach Prometheus at {url}")
    assert "Traceback" not in err


def test_no_prometheus_url_says_how_to_give_one(capsys, monkeypatch):
    monkeypatch.delenv("LENS_PROMETHEUS_URL", raising=False)
    code, _, err = run(capsys, "pods")
    assert code == 1 and "pass --prometheus URL or set LENS_PROMETHEUS_URL" in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["devices", "--hardware", "cpu", "--prometheus", "http://p:9090"], "TELEMETRY_NOT_DECLARED"),
        (["devices", "--hardware", "no-such-chip", "--prometheus", "http://p:9090"], "ACCELERATOR_NOT_REGISTERED"),
        (["devices", "--snapshot", "/no/such/page.prom", "--hardware", "nvidia"], "TELEMETRY_SNAPSHOT_INVALID"),
    ],
)
def test_bad_input_is_a_coded_error(capsys, args, message):
    code, _, err = run(capsys, *args)
    assert code == 1 and err.startswith(f"error: {message}")


def test_a_bad_time_is_refused(capsys):
    code, _, err = run(capsys, "devices", "--prometheus", "http://p:9090", "--at", "yesterday")
    assert code == 1 and err.startswith("error: OPTION_INVALID: --at 'yesterday': give Unix seconds or an ISO 8601 time")


@pytest.mark.parametrize("command, variables", [
    ("devices", ["LENS_PROMETHEUS_URL", "LENS_CLUSTER_OBJECTS", "LENS_PROMETHEUS_TIMEOUT"]),
    ("pods", ["LENS_PROMETHEUS_URL", "LENS_CLUSTER_OBJECTS", "LENS_PROMETHEUS_TIMEOUT"]),
])
def test_help_names_the_environment_variables(capsys, monkeypatch, command, variables):
    """Rich reads '[env X]' as markup and drops it; the help must still say which variable to set."""
    monkeypatch.setenv("COLUMNS", "400")
    code, out, _ = run(capsys, command, "--help")
    assert code == 0
    assert [v for v in variables if v not in out] == []


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_a_timeout_that_is_not_a_finite_number_is_refused(capsys, monkeypatch, value):
    """NaN reached httpx as a deadline and came back as a ValueError traceback."""
    monkeypatch.delenv("LENS_PROMETHEUS_TIMEOUT", raising=False)
    code, _, err = run(capsys, "devices", "--prometheus", "http://127.0.0.1:1", "--timeout", value)
    assert (code, err) == (1, f"error: OPTION_INVALID: --timeout {value}: must be a finite number of seconds more than 0\n")
    monkeypatch.setenv("LENS_PROMETHEUS_TIMEOUT", value)
    code, _, err = run(capsys, "devices", "--prometheus", "http://127.0.0.1:1")
    assert code == 1 and err.startswith(f"error: PROMETHEUS_URL_INVALID: LENS_PROMETHEUS_TIMEOUT={value!r} must be a finite")


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_a_time_that_is_not_finite_is_refused(capsys, value):
    """NaN was sent to Prometheus and came back as an empty, plausible-looking table."""
    code, _, err = run(capsys, "devices", "--prometheus", "http://p:9090", "--at", value)
    assert code == 1 and err.startswith(f"error: OPTION_INVALID: --at {value!r}: give Unix seconds or an ISO 8601 time")


def test_a_time_without_a_zone_is_refused_rather_than_read_as_server_local(capsys):
    code, _, err = run(capsys, "devices", "--prometheus", "http://p:9090", "--at", "2026-01-01T00:00:00")
    assert code == 1 and "has no time zone; add Z or an offset" in err


@needs_prometheus
def test_a_device_with_health_problems_is_flagged_in_the_table(prometheus, capsys):
    code, out, err = run(capsys, "devices", "--prometheus", prometheus.url, "--hardware", "nvidia", "--node", "health-node-01",
                         "--at", AT)
    assert code == 0
    flagged = [line for line in out.splitlines() if "!" in line]
    assert len(flagged) == 1 and "0 !" in flagged[0]
    assert "health-node-01/0: health: uncorrected memory errors: 2; last critical event code: 79" in " ".join(err.split())
