"""The shared Prometheus helper really serves backfilled data at fixed timestamps."""

from pathlib import Path

import pytest

from llm_d_lens.testing.prometheus import BASE_TIMESTAMP, exposition_to_openmetrics, run_prometheus, skip_reason, to_openmetrics

pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")


def test_backfilled_samples_are_queryable_at_the_fixed_time():
    om = to_openmetrics([("lens_probe", {"node": "a", "gpu": "0"}, 0.5), ("lens_probe", {"node": "b", "gpu": "0"}, 0.25)])
    with run_prometheus(om) as prom:
        result = prom.query("sum by (node) (lens_probe)", at=BASE_TIMESTAMP + 30)
    assert {r["metric"]["node"]: float(r["value"][1]) for r in result} == {"a": 0.5, "b": 0.25}


def test_exposition_text_keeps_names_without_total_suffix():
    text = "# TYPE energy_mj counter\nenergy_mj{gpu=\"0\"} 1500\n"
    om = exposition_to_openmetrics(text)
    with run_prometheus(om) as prom:
        result = prom.query("energy_mj", at=BASE_TIMESTAMP)
    assert [float(r["value"][1]) for r in result] == [1500.0]


def _rules(directory, groups: int) -> Path:

    import yaml

    Path(directory).mkdir(parents=True, exist_ok=True)
    document = {"groups": [{"name": f"group-{i}", "rules": [{"record": "lens_probe:copy", "expr": "lens_probe",
                                                               "labels": {"group": str(i)}}]} for i in range(groups)]}
    path = Path(directory) / "rules.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def _evaluations(blocks) -> dict[str, list[float]]:
    with run_prometheus(None, blocks=[blocks]) as prom:
        result = prom.query("lens_probe:copy[10m]", at=BASE_TIMESTAMP + 300)
    return {r["metric"]["group"]: [float(t) for t, _ in r["values"]] for r in result}


def test_the_rule_backfill_records_every_group_at_times_independent_of_the_rules_directory(tmp_path):
    """promtool shifts each group's evaluations by a hash of its name and file path; from the file's own directory,
    the path is its bare name, so two runs in two temporary directories evaluate at the same times."""
    from llm_d_lens.testing.prometheus import backfill_rules

    groups = 8
    om = to_openmetrics([("lens_probe", {"node": "a"}, 1.0)])
    with run_prometheus(om) as prom:
        found = [_evaluations(backfill_rules(prom.url, _rules(tmp_path / where, groups), tmp_path / where / "blocks",
                                             BASE_TIMESTAMP, BASE_TIMESTAMP + 60)) for where in ("one", "another/deeper")]
    assert found[0] == found[1]
    assert set(found[0]) == {str(i) for i in range(groups)}  # every group recorded, each evaluated once in the window
    assert all(len(times) == 1 and BASE_TIMESTAMP <= times[0] <= BASE_TIMESTAMP + 60 for times in found[0].values())
    assert len({times[0] for times in found[0].values()}) > 1  # the offsets differ by group: the hash is really there


def test_a_rule_backfill_window_across_a_block_boundary_is_refused(tmp_path):
    """promtool 2.42 stops at the first block part holding no evaluation time, losing the groups evaluated after it."""
    from llm_d_lens.testing.prometheus import backfill_rules

    with pytest.raises(ValueError, match="crosses a 7200 s block boundary"):
        backfill_rules("http://127.0.0.1:9", _rules(tmp_path, 1), tmp_path / "blocks", BASE_TIMESTAMP - 60, BASE_TIMESTAMP + 60)
