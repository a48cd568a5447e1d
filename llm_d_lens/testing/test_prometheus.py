"""The shared Prometheus helper really serves backfilled data at fixed timestamps."""

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
