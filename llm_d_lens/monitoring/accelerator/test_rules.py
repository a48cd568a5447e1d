"""The generated rules, on Prometheus' own rule engine: ``promtool check rules`` and ``promtool test rules``.

The recorded numbers are held to Lens' snapshot evaluation of the same exporter pages (Python, no
PromQL); the alerts to series written here per alert: a device with the problem beside one without,
a node with the hardware and no exporter beside one with, a down exporter target beside a down
target that never served device metrics.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from llm_d_lens.cli.app import main
from llm_d_lens.monitoring.accelerator.plan import HEALTH_FLAGS, DevicePlan
from llm_d_lens.monitoring.accelerator.rules import FLAG_ALERTS, HARDWARE_LABEL, identity_quantity, rules_file
from llm_d_lens.monitoring.accelerator.service import select, snapshot_devices
from llm_d_lens.testing.telemetry_pages import REPO, as_stored, fixture_text, sample_text
from llm_d_lens.prometheus.promql import parse_matcher
from llm_d_lens.testing.prometheus import promtool, promtool_skip_reason, series_notation

needs_promtool = pytest.mark.skipif(promtool_skip_reason() is not None, reason=promtool_skip_reason() or "")
BUILT_INS = [s.profile.id for s in select(None)]
SHIPPED = REPO / "manifests" / "monitoring" / "prometheusrule.yaml"
#: one real-format exporter page per built-in, as a scrape stores it (the target's labels added)
PAGES = {
    "nvidia": lambda: sample_text("dcgm-exporter.prom"),
    "amd": lambda: sample_text("amd-device-metrics-exporter.prom"),
    "intel-xpu": lambda: sample_text("intel-xpumanager.prom"),
    "intel-gaudi": lambda: sample_text("gaudi-metric-exporter.prom"),
    "google-tpu": lambda: fixture_text("tpu-v6e.prom"),
}
TARGET = {"job": "device-exporter", "instance": "10.0.0.7:9400"}
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)$")
STEPS = 30  # samples a minute apart: every alert's `for` has passed by the last evaluation


def selected(hardware: str):
    return next(s for s in select([hardware]))


def write(path: Path, document: dict) -> Path:
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def assert_promtool_passes(tmp_path: Path, hardware: str, tests: list[dict]) -> None:
    rules = write(tmp_path / "rules.yaml", rules_file(select([hardware])))
    unit = write(tmp_path / "test.yaml", {"rule_files": [rules.name], "evaluation_interval": "1m", "tests": tests})
    done = promtool("test", "rules", unit.name, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def labels_text(labels: dict[str, str]) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def expand(template: str, labels: dict[str, str], value: float) -> str:
    """Prometheus' alert templating, for the two forms the rules use."""
    text = re.sub(r"\{\{ \$labels\.([a-zA-Z_]+) \}\}", lambda m: labels.get(m.group(1), ""), template)
    return text.replace("{{ $value }}", f"{value:g}")


def alert(rule: dict, labels: dict[str, str], value: float = 0.0) -> dict:
    """The expected alert: the rule's own labels and annotations over the series' labels."""
    full = {**labels, **rule["labels"]}
    return {"exp_labels": full, "exp_annotations": {k: expand(v, full, value) for k, v in rule["annotations"].items()}}


def rule_named(hardware: str, name: str) -> dict:
    return next(r for r in rules_file(select([hardware]))["groups"][0]["rules"] if r.get("alert") == name)


# -- the file and the command ---------------------------------------------------------------------

def test_one_group_per_hardware_and_one_recording_per_declared_quantity():
    groups = rules_file(select(None))["groups"]
    assert [g["name"] for g in groups] == [f"lens-accelerator-{h}" for h in BUILT_INS]
    for group, hardware in zip(groups, BUILT_INS):
        plan = selected(hardware).plan
        records = [r["record"] for r in group["rules"] if "record" in r]
        assert records[:len(plan.quantities)] == [f"lens:accelerator_{q.quantity.field}" for q in plan.quantities]
        # then what else a refresh reads: a fallback record per quantity with fallbacks, the sentinels, targets, inventory
        rest = ["lens:accelerator_fallback"] * sum(bool(q.fallbacks) for q in plan.quantities)
        rest += ["lens:accelerator_sentinel"] * bool(plan.sentinel_selections())
        rest += ["lens:accelerator_scrape_target"] * ("pod" in plan.labels)
        assert records[len(plan.quantities):] == [*rest, "lens:accelerator_inventory"]
        assert all(r["labels"][HARDWARE_LABEL] == hardware for r in group["rules"] if "record" in r)
        assert "lens:accelerator_memory_used_bytes" in records


def test_alerts_only_for_the_health_quantities_a_profile_declares():
    for hardware in BUILT_INS:
        plan = selected(hardware).plan
        declared = {q.quantity.key for q in plan.quantities}
        names = {r["alert"] for r in rules_file(select([hardware]))["groups"][0]["rules"] if "alert" in r}
        flags = {FLAG_ALERTS[key].name for key, _, _ in HEALTH_FLAGS if key in declared}
        assert names - flags == {"LensAcceleratorExporterMissing", "LensAcceleratorExporterScrapeDown"}, hardware
        assert flags <= names
    # the TPU profile declares no health flag, the Gaudi one only its links
    assert not any("alert" in r and r["alert"] in {a.name for a in FLAG_ALERTS.values()}
                   for r in rules_file(select(["google-tpu"]))["groups"][0]["rules"])
    gaudi = {r["alert"] for r in rules_file(select(["intel-gaudi"]))["groups"][0]["rules"] if "alert" in r}
    assert "LensAcceleratorLinkDown" in gaudi and "LensAcceleratorUncorrectedMemoryErrors" not in gaudi


def test_every_health_flag_has_an_alert_and_every_alert_a_runbook():
    assert set(FLAG_ALERTS) == {key for key, _, _ in HEALTH_FLAGS}
    for group in rules_file(select(None))["groups"]:
        for rule in group["rules"]:
            if "alert" in rule:
                assert len(rule["annotations"]["runbook"]) > 80 and rule["annotations"]["summary"], rule["alert"]
                assert rule["labels"]["severity"] in ("warning", "critical")


def test_the_command_refuses_object_options_for_a_plain_file_and_a_bad_label(capsys):
    assert main(["telemetry", "rules", "--namespace", "monitoring"]) != 0
    assert "OPTION_INVALID" in capsys.readouterr().err
    assert main(["telemetry", "rules", "--kind", "prometheusrule", "--label", "release"]) != 0
    assert "OPTION_INVALID" in capsys.readouterr().err


def test_the_command_writes_a_file_never_replaces_one_and_prints_json(tmp_path, capsys):
    target = tmp_path / "rules.yaml"
    assert main(["telemetry", "rules", "--hardware", "amd", "--kind", "prometheusrule", "--label", "release=kps",
                 "--output-file", str(target)]) == 0
    written = yaml.safe_load(target.read_text())
    assert written["kind"] == "PrometheusRule" and written["metadata"]["labels"]["release"] == "kps"
    assert main(["telemetry", "rules", "--hardware", "amd", "--output-file", str(target)]) != 0
    assert "RULES_FILE_EXISTS" in capsys.readouterr().err and yaml.safe_load(target.read_text()) == written
    assert main(["telemetry", "rules", "--hardware", "amd", "--no-alerts", "-o", "json"]) == 0
    import json

    rules = json.loads(capsys.readouterr().out)["groups"][0]["rules"]
    assert rules and all("record" in r for r in rules)


# -- promtool ---------------------------------------------------------------------------------------

@needs_promtool
@pytest.mark.parametrize("hardware", BUILT_INS)
def test_promtool_checks_every_built_ins_rules(tmp_path, hardware):
    plan = selected(hardware).plan
    declared = {q.quantity.key for q in plan.quantities}
    records = len(rules_file(select([hardware]), alerts=False)["groups"][0]["rules"])
    assert records > len(plan.quantities)  # the quantities, and the inventory at least
    expected = records + sum(key in declared for key, _, _ in HEALTH_FLAGS) + 2
    done = promtool("check", "rules", str(write(tmp_path / "rules.yaml", rules_file(select([hardware])))))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {expected} rules found" in done.stdout


@needs_promtool
def test_promtool_checks_the_shipped_prometheusrule_groups(tmp_path):
    spec = yaml.safe_load(SHIPPED.read_text(encoding="utf-8"))["spec"]
    done = promtool("check", "rules", str(write(tmp_path / "rules.yaml", spec)))
    assert done.returncode == 0, done.stdout + done.stderr


def stored_samples(hardware: str) -> tuple[str, list[tuple[str, float]]]:
    """The hardware's page as a scrape stores it, and its samples as (series, value)."""
    text = as_stored(PAGES[hardware](), TARGET)
    samples = []
    for line in text.splitlines():
        found = _SAMPLE.match(line.strip())
        if found:
            samples.append((found.group(1) + (found.group(2) or ""), float(found.group(3))))
    return text, samples


@needs_promtool
@pytest.mark.parametrize("hardware", BUILT_INS)
def test_recorded_series_hold_the_snapshots_numbers(tmp_path, hardware):
    """Each recording rule, evaluated by promtool over a real-format page, gives what Lens reads from that page."""
    text, samples = stored_samples(hardware)
    report = snapshot_devices(text, "page", select([hardware]))
    assert report.devices, hardware
    plan = selected(hardware).plan
    cases = []
    for quantity in plan.quantities:
        expected = []
        for device in report.devices:
            if quantity.quantity.field not in device.values:
                continue
            labels = {"__name__": f"lens:accelerator_{quantity.quantity.field}", HARDWARE_LABEL: hardware,
                      "lens_node": device.node, "lens_device": device.device}
            if device.sub and quantity.fold == "none":
                labels["lens_sub"] = device.sub
            expected.append({"labels": labels_text(labels), "value": device.values[quantity.quantity.field]})
        cases.append({"expr": f"lens:accelerator_{quantity.quantity.field}", "eval_time": "2m", "exp_samples": expected})
    assert sum(bool(c["exp_samples"]) for c in cases) >= 3, hardware  # the page has numbers for most quantities
    series = [{"series": name, "values": series_notation([value] * 5)} for name, value in samples]
    assert_promtool_passes(tmp_path, hardware, [{"interval": "1m", "input_series": series, "promql_expr_test": cases}])


def device_series(plan: DevicePlan, key: str, node: str, device: str, value: float) -> list[dict]:
    """Series for one device of the quantity ``key``: its own source's metrics, the profile's matchers met."""
    quantity = next(q for q in plan.quantities if q.quantity.key == key)
    labels = {plan.labels["node"][0]: node, plan.labels["device"][0]: device}
    for text in quantity.matchers:
        name, op, wanted = parse_matcher(text)
        if op == "=":
            labels[name] = wanted  # "!=" and "!~" matchers exclude aggregates: an absent label meets them
    return [{"series": f"{metric}{labels_text(labels)}", "values": series_notation([value] * STEPS)}
            for metric in quantity.metrics]


@needs_promtool
@pytest.mark.parametrize("hardware", BUILT_INS)
def test_each_health_alert_fires_for_the_device_with_the_problem_only(tmp_path, hardware):
    plan = selected(hardware).plan
    declared = {q.quantity.key for q in plan.quantities}
    flags = [(key, when) for key, _, when in HEALTH_FLAGS if key in declared]
    if not flags:
        pytest.skip(f"{hardware} declares no health flag: no alert to test")
    tests = []
    for key, when in flags:
        bad, good = (3.0, 0.0) if when == "nonzero" else (0.0, 1.0)
        series = device_series(plan, key, "node-a", "0", bad) + device_series(plan, key, "node-a", "1", good)
        rule = rule_named(hardware, FLAG_ALERTS[key].name)
        quantity = next(q for q in plan.quantities if q.quantity.key == key)
        value = bad * len(quantity.metrics) * float(quantity.factor)  # a sum of the metrics when several
        fired = alert(rule, {"lens_node": "node-a", "lens_device": "0"}, value)
        tests.append({"interval": "1m", "input_series": series, "alert_rule_test": [
            {"alertname": rule["alert"], "eval_time": f"{STEPS - 1}m", "exp_alerts": [fired]},
            {"alertname": rule["alert"], "eval_time": "0m",
             "exp_alerts": [] if rule.get("for") else [fired]},  # a held alert is pending, not firing, at first
        ]})
    assert_promtool_passes(tmp_path, hardware, tests)


def capacity_resource(prefix: str) -> str:
    """A resource under ``prefix`` as kube-state-metrics names it: '.', '/' and '-' become '_'."""
    name = prefix + "devices" if prefix.endswith(("/", "-")) else prefix
    return name.replace(".", "_").replace("/", "_").replace("-", "_")


@needs_promtool
@pytest.mark.parametrize("hardware", BUILT_INS)
def test_exporter_missing_fires_for_the_node_with_devices_and_no_series(tmp_path, hardware):
    chosen = selected(hardware)
    plan, identity = chosen.plan, identity_quantity(chosen.plan)
    series = device_series(plan, identity.quantity.key, "node-with", "0", 1.0)
    for node in ("node-with", "node-without"):
        resource = capacity_resource(chosen.profile.resource_prefixes[0])
        series.append({"series": f'kube_node_status_capacity{{node="{node}", resource="{resource}", unit="integer"}}',
                       "values": series_notation([8.0] * STEPS)})
    series.append({"series": 'kube_node_status_capacity{node="cpu-only", resource="cpu", unit="core"}',
                   "values": series_notation([64.0] * STEPS)})
    rule = rule_named(hardware, "LensAcceleratorExporterMissing")
    tests = [{"interval": "1m", "input_series": series, "alert_rule_test": [
        {"alertname": rule["alert"], "eval_time": f"{STEPS - 1}m", "exp_alerts": [alert(rule, {"node": "node-without"})]},
        {"alertname": rule["alert"], "eval_time": "10m", "exp_alerts": []},  # for 15m: still pending
    ]}]
    # the node label kube-state-metrics writes when its allowlist names the profile's node label
    key, value = sorted(chosen.profile.node_label_selector.items())[0]
    label = "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", key)
    labelled = [*device_series(plan, identity.quantity.key, "node-with", "0", 1.0),
                {"series": f'kube_node_labels{{node="labelled", {label}="{"yes" if value == "*" else value}"}}',
                 "values": series_notation([1.0] * STEPS)}]
    if len(chosen.profile.node_label_selector) == 1:
        tests.append({"interval": "1m", "input_series": labelled, "alert_rule_test": [
            {"alertname": rule["alert"], "eval_time": f"{STEPS - 1}m", "exp_alerts": [alert(rule, {"node": "labelled"})]},
        ]})
    assert_promtool_passes(tmp_path, hardware, tests)


@needs_promtool
@pytest.mark.parametrize("hardware", BUILT_INS)
def test_scrape_down_fires_for_a_target_that_served_the_hardware(tmp_path, hardware):
    plan = selected(hardware).plan
    metric, matchers = plan.identity_selectors()[0]
    labels = {**TARGET, plan.labels["node"][0]: "node-a", plan.labels["device"][0]: "0"}
    for text in matchers:
        name, op, wanted = parse_matcher(text)
        if op == "=":
            labels[name] = wanted
    up = [1.0, 1.0, *([0.0] * (STEPS - 2))]
    served = [1.0, 1.0, *([None] * (STEPS - 2))]  # no samples once the scrape fails
    series = [
        {"series": f"up{labels_text(TARGET)}", "values": series_notation(up)},
        {"series": f"{metric}{labels_text(labels)}", "values": series_notation(served)},
        {"series": 'up{job="web", instance="10.0.0.9:80"}', "values": series_notation([0.0] * STEPS)},
    ]
    rule = rule_named(hardware, "LensAcceleratorExporterScrapeDown")
    assert_promtool_passes(tmp_path, hardware, [{"interval": "1m", "input_series": series, "alert_rule_test": [
        {"alertname": rule["alert"], "eval_time": "10m", "exp_alerts": [alert(rule, dict(TARGET))]},
        {"alertname": rule["alert"], "eval_time": "4m", "exp_alerts": []},  # down 2 minutes: pending
    ]}])
