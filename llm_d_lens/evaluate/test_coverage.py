"""The coverage check against a real Prometheus holding backfilled profiler counters.

Every case lives in one Prometheus under its own ``case`` label, selected through the profile's
``coverage.source.matchers``: one server start for the module, and the matchers (and their
escaping) are exercised by every test. Each series has a sample at the run's start and one 60 s
later, at its end; a counter that moved did work during the run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_d_lens.cli.app import main as lens_main
from llm_d_lens.evaluate.coverage import check_coverage
from llm_d_lens.evaluate.profiles import load_file
from llm_d_lens.evaluate.test_workload_profiles import changed, write_profile
from llm_d_lens.testing.prometheus import BASE_TIMESTAMP, free_port, run_prometheus, skip_reason

START, END = BASE_TIMESTAMP, BASE_TIMESTAMP + 60
METRIC = "nccl_profiler_collective_bytes_total"
WEIRD_CASE = 'we"ird\\case'  # a matcher value that must be escaped to select anything


def pci(gpu: int) -> str:
    return f"0000:{0x18 + gpu:02x}:00.0"


def nccl(case: str, host: str, gpu: int, communicator: str, rank: int, before: float | None, after: float) -> tuple:
    labels = {"case": case, "hostname": host, "gpu_pci_bus_id": pci(gpu), "gpu_uuid": f"GPU-{host}-{gpu}",
              "communicator": communicator, "rank": str(rank), "local_rank": str(rank % 4)}
    return METRIC, labels, before, after


def trap(case: str) -> list[tuple]:
    """Two machines of four GPUs, three communicators: one tensor-parallel group spanning both
    machines numbers its ranks 0..7, and each machine's node-local group numbers its own 0..3.
    Every GPU thus reports under two ranks: (host, rank) gives 4 + 8 = 12 pairs for 8 GPUs."""
    rows = []
    for h, host in enumerate(("node-a", "node-b")):
        for gpu in range(4):
            rows.append(nccl(case, host, gpu, "span", h * 4 + gpu, 100, 900))
            rows.append(nccl(case, host, gpu, f"local-{host}", gpu, 100, 900))
    return rows


def dataset() -> list[tuple]:
    rows = trap("trap")
    # the decode pool (node-b, its own communicator) is dead: its series are still republished, flat
    for h, host, communicator in ((0, "node-a", "prefill"), (1, "node-b", "decode")):
        for gpu in range(4):
            rows.append(nccl("dead-decode", host, gpu, communicator, gpu, 100, 100 if host == "node-b" else 500))
    # only one machine reports at all; one of its GPUs starts during the run (no sample at the start)
    rows += [nccl("one-host", "node-a", gpu, "tp", gpu, 100, 200) for gpu in range(3)]
    rows.append(nccl("one-host", "node-a", 3, "tp", 3, None, 50))
    # a GPU known only by uuid, and a series with no GPU identity at all
    rows.append((METRIC, {"case": "uuid", "hostname": "n", "gpu_uuid": "GPU-1", "communicator": "c"}, 1, 2))
    rows.append((METRIC, {"case": "uuid", "hostname": "n", "communicator": "c"}, 1, 2))
    # custom metric and label names, selected by a value that needs escaping
    rows.append(("custom_bytes_total", {"case": WEIRD_CASE, "node": "x", "bus": "0000:01:00.0", "comm": "k"}, 0, 10))
    rows.append(("custom_bytes_total", {"case": "other", "node": "y", "bus": "0000:02:00.0", "comm": "k"}, 0, 10))
    return rows


def openmetrics(rows: list[tuple]) -> str:
    """Two samples per series, kept together in time order as the backfill tool requires."""
    lines = []
    for metric, labels, before, after in rows:
        # OpenMetrics escaping, written out here rather than borrowed from the code under test
        rendered = ",".join(f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
                            for k, v in sorted(labels.items()))
        if before is not None:
            lines.append(f"{metric}{{{rendered}}} {before} {START}")
        lines.append(f"{metric}{{{rendered}}} {after} {END}")
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def prometheus():
    if skip_reason() is not None:
        pytest.skip(skip_reason())
    with run_prometheus(openmetrics(dataset())) as server:
        yield server


def profile(tmp_path: Path, case: str, name: str = "p", **edits: Any):
    data = changed(**edits)
    data["coverage"].setdefault("source", {}).setdefault("matchers", {"case": case})
    return load_file(write_profile(tmp_path, name, data))


def test_gpus_are_counted_by_pci_bus_id_not_by_rank(prometheus, tmp_path):
    # the fixture really holds the trap: grouping by (host, rank) gives 12
    pairs = prometheus.query(f'count(count by (hostname, rank) ({METRIC}{{case="trap"}}))', at=END)
    assert pairs[0]["value"][1] == "12"

    loaded = profile(tmp_path, "trap", hardware={"machines": 2, "gpus_per_machine": 4, "sku": "s"},
                     coverage={"hosts": 2, "gpus": 8, "communicators": 3})
    report = check_coverage(loaded, prometheus.url, START, END)
    assert report.gpus == 8
    assert report.host_rank_pairs == 12
    assert report.hosts == ["node-a", "node-b"]
    assert report.gpus_by_host == {"node-a": [pci(g) for g in range(4)], "node-b": [pci(g) for g in range(4)]}
    assert report.communicators == ["local-node-a", "local-node-b", "span"]
    assert (report.problems, report.ok) == ([], True)


def test_a_dead_decode_pool_is_named(prometheus, tmp_path):
    loaded = profile(tmp_path, "dead-decode", hardware={"machines": 2, "gpus_per_machine": 4, "sku": "s"},
                     serving={"mode": "disaggregated", "model": "m", "prefill": {}, "decode": {}},
                     coverage={"hosts": 2, "gpus": 8, "communicators": 2})
    report = check_coverage(loaded, prometheus.url, START, END)
    idle = ", ".join(f"node-b {pci(g)}" for g in range(4))
    assert report.problems == [
        "1 host reported, 2 required: does every machine reach the collector at http://collector:4317? (reported: node-a)",
        f"4 GPUs reported, 8 required: 4 GPUs report a series but did no work during the run ({idle})",
        "1 communicator reported, 2 required: is the decode pool alive?",
    ]
    assert report.ok is False


def test_a_gpu_that_starts_during_the_run_counts_and_a_missing_host_is_reported(prometheus, tmp_path):
    loaded = profile(tmp_path, "one-host", coverage={"hosts": 2, "gpus": 8, "communicators": 1})
    report = check_coverage(loaded, prometheus.url, START, END)
    assert report.gpus_by_host == {"node-a": [pci(g) for g in range(4)]}
    assert report.problems == [
        "1 host reported, 2 required: does every machine reach the collector at http://collector:4317? (reported: node-a)",
        "4 GPUs reported, 8 required: is every worker running with the profiler loaded?",
    ]


def test_more_than_expected_is_a_problem_too(prometheus, tmp_path):
    loaded = profile(tmp_path, "trap", hardware={"machines": 2, "gpus_per_machine": 8, "sku": "s"},
                     coverage={"hosts": 1, "gpus": 6, "communicators": 1})
    assert check_coverage(loaded, prometheus.url, START, END).problems == [
        "2 hosts reported, 1 expected: another workload shares this profiler, or coverage.hosts is out of date "
        "(reported: node-a, node-b)",
        "8 GPUs reported, 6 expected: another workload shares this profiler, or coverage.gpus is out of date",
    ]


def test_uuid_identifies_a_gpu_without_a_pci_bus_id(prometheus, tmp_path):
    loaded = profile(tmp_path, "uuid", coverage={"hosts": 1, "gpus": 1, "communicators": 1})
    report = check_coverage(loaded, prometheus.url, START, END)
    assert report.gpus_by_host == {"n": ["GPU-1"]}
    assert report.notes == ["1 series did work without a gpu_pci_bus_id or gpu_uuid label; the GPUs behind them "
                            "cannot be counted"]
    assert report.ok


def test_metric_and_label_names_come_from_the_profile_and_matcher_values_are_escaped(prometheus, tmp_path):
    source = {"metric": "custom_bytes_total", "matchers": {"case": WEIRD_CASE},
              "labels": {"host": "node", "gpu_pci_bus_id": "bus", "communicator": "comm"}}
    loaded = profile(tmp_path, WEIRD_CASE, coverage={"hosts": 1, "gpus": 1, "communicators": 1, "source": source})
    report = check_coverage(loaded, prometheus.url, START, END)
    assert (report.hosts, report.gpus_by_host, report.communicators) == (["x"], {"x": ["0000:01:00.0"]}, ["k"])


def test_no_series_at_all_says_what_to_check(prometheus, tmp_path):
    loaded = profile(tmp_path, "no-such-case", coverage={"hosts": 1, "gpus": 1, "communicators": 1})
    assert check_coverage(loaded, prometheus.url, START, END).problems == [
        f'no series of {METRIC}{{case="no-such-case"}} at the end of the run: is the profiler loaded, sending to '
        f"http://collector:4317, and is Prometheus scraping the collector?"]


def test_coverage_command_exit_codes_and_json(prometheus, tmp_path, capsys):
    good = changed(hardware={"machines": 2, "gpus_per_machine": 4, "sku": "s"},
                   coverage={"hosts": 2, "gpus": 8, "communicators": 3, "source": {"matchers": {"case": "trap"}}})
    write_profile(tmp_path, "trap", good)
    args = ["evaluate", "coverage", "--profile-dir", str(tmp_path), "--prometheus", prometheus.url,
            "--start", str(START), "--end", "2026-01-01T00:01:00Z", "--output", "json"]
    assert lens_main([*args, "--profile", "trap"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert (body["reported"], body["host_rank_pairs"], body["ok"]) == ({"hosts": 2, "gpus": 8, "communicators": 3}, 12, True)

    assert lens_main([*args[:-2], "--profile", "trap"]) == 0  # the table
    table = capsys.readouterr().out
    assert "(host, rank) pairs: 12" in table and "✓ coverage matches the profile" in table

    write_profile(tmp_path, "short", changed(coverage={"hosts": 2, "gpus": 16, "communicators": 3,
                                                       "source": {"matchers": {"case": "trap"}}}))
    assert lens_main([*args, "--profile", "short"]) == 1
    assert json.loads(capsys.readouterr().out)["problems"] == [
        "8 GPUs reported, 16 required: is every worker running with the profiler loaded?"]


# -- Prometheus errors at the command line ------------------------------------------------------
# (the client itself, and every error it raises, is tested in llm_d_lens/prometheus/test_client.py)


def test_an_unreachable_prometheus_is_one_error_line_naming_server_and_query(tmp_path, capsys):
    write_profile(tmp_path, "trap", changed(coverage={"hosts": 1, "gpus": 1, "communicators": 1,
                                                      "source": {"matchers": {"case": "trap"}}}))
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    code = lens_main(["evaluate", "coverage", "--profile-dir", str(tmp_path), "--profile", "trap", "--prometheus", url,
                      "--start", str(START), "--end", str(END)])
    captured = capsys.readouterr()
    assert code == 1 and captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err
    assert lines[0].startswith(f"error: PROMETHEUS_UNREACHABLE: cannot reach Prometheus at {url}: ")
    assert '(query: sum by (' in lines[0] and f'({METRIC}{{case="trap"}}))' in lines[0]


def test_a_rejected_query_is_one_error_line_naming_server_query_and_reason(prometheus, tmp_path, capsys):
    # a metric name the profile accepts but PromQL reads as a keyword: Prometheus refuses the query
    source = {"metric": "on", "matchers": {"case": "trap"}}
    write_profile(tmp_path, "kw", changed(coverage={"hosts": 1, "gpus": 1, "communicators": 1, "source": source}))
    code = lens_main(["evaluate", "coverage", "--profile-dir", str(tmp_path), "--profile", "kw",
                      "--prometheus", prometheus.url, "--start", str(START), "--end", str(END)])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert err.startswith(f"error: PROMETHEUS_BAD_QUERY: Prometheus at {prometheus.url} rejected the query: ")
    assert "parse error" in err and 'on{case="trap"}))' in err


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_run_boundary_that_is_not_a_finite_time_is_a_usage_error(capsys, value):
    """NaN passed the start-before-end check and asked Prometheus about no time at all."""
    code = lens_main(["evaluate", "coverage", "--profile", "default", "--prometheus", "http://127.0.0.1:1",
                      "--start", "1767225600", "--end", value])
    assert code == 2 and f"{value!r} is neither Unix seconds nor an ISO 8601 time" in capsys.readouterr().err
