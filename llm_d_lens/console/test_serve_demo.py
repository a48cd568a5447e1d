"""``lens serve --demo``: the embedded cluster and telemetry, refused when the server is pointed elsewhere."""

from __future__ import annotations

import pytest

from llm_d_lens.cli.app import _demo_environment, main


def test_demo_sets_the_embedded_cluster_and_telemetry():
    env: dict[str, str] = {}
    _demo_environment(env)
    assert env == {"LENS_CLUSTER_DEMO": "1", "LENS_TELEMETRY_DEMO": "1"}


def test_demo_with_a_prometheus_charts_that_prometheus():
    env = {"LENS_PROMETHEUS_URL": "http://prometheus:9090"}
    _demo_environment(env)
    assert "LENS_TELEMETRY_DEMO" not in env and env["LENS_CLUSTER_DEMO"] == "1"


@pytest.mark.parametrize("variable", ["LENS_CLUSTER_SNAPSHOT", "LENS_KUBE_CONTEXT"])
def test_demo_and_another_cluster_is_a_coded_refusal_before_anything_starts(monkeypatch, capsys, variable):
    monkeypatch.setenv(variable, "elsewhere")
    import os

    before = dict(os.environ)
    assert main(["serve", "--demo", "--port", "1"]) == 1
    assert dict(os.environ) == before  # a refusal sets nothing: no trusted hosts or watch setting left behind
    err = capsys.readouterr().err
    assert err.startswith("error: CLUSTER_SOURCE_CONFLICT: ") and variable in err and "Traceback" not in err
