"""Prices and cost per million tokens: the arithmetic by hand, every bad price refused with its code on each edge."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.cli.app import main
from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.planning import cost
from llm_d_lens.planning.errors import PriceInvalid
from llm_d_lens.serving import api as cluster_api


def test_cost_per_million_tokens_by_hand():
    # 8 devices x $2.50 = $20 an hour; 1000 tokens a second = 3.6 million an hour: $20 / 3.6 = $5.5556 a million
    assert cost.per_million(8, 2.5, 1000) == pytest.approx(5.5556, abs=1e-4)
    assert cost.per_million(8, 2.5, 0) is None  # no throughput, no cost per token


def test_the_most_specific_price_name_wins():
    prices = cost.Prices(cost.parse_flags(["nvidia=2.5", "NVIDIA H200=3.1", "nvidia/NVIDIA-H100-80GB-HBM3=2.2"]))
    assert prices.for_pool("nvidia/NVIDIA H200", "nvidia", "NVIDIA H200") == (3.1, "NVIDIA H200")
    assert prices.for_pool("nvidia/NVIDIA-H100-80GB-HBM3", "nvidia", "NVIDIA-H100-80GB-HBM3") == (
        2.2, "nvidia/NVIDIA-H100-80GB-HBM3")
    assert prices.for_pool("nvidia/NVIDIA-B200", "nvidia", "NVIDIA-B200") == (2.5, "nvidia")
    assert prices.for_pool("amd/MI300X", "amd", "MI300X") is None
    # with only the H200 pool, its own price shadows "nvidia": both other names price nothing
    assert prices.unmatched([("nvidia/NVIDIA H200", "nvidia", "NVIDIA H200")]) == ["nvidia", "nvidia/NVIDIA-H100-80GB-HBM3"]


@pytest.mark.parametrize("flag,reason", [
    ("nvidia", "must be KEY=USD"), ("nvidia=-1", "must be above 0"), ("nvidia=0", "must be above 0"),
    ("nvidia=abc", "must be a number"), ("nvidia=nan", "must be a number"), ("nvidia=inf", "must be a number"),
    ("=2", "must be a pool, product or profile name"), ("nvidia=20000", "at most 10,000"),
])
def test_bad_price_flags_are_refused_with_their_code(flag, reason):
    with pytest.raises(PriceInvalid) as caught:
        cost.parse_flags([flag])
    assert caught.value.code == "PLANNING_PRICE_INVALID" and reason in caught.value.message


def test_a_name_priced_twice_is_refused_in_flags_and_files(tmp_path):
    with pytest.raises(PriceInvalid, match="priced twice"):
        cost.parse_flags(["amd=2", "amd=3"])
    twice = tmp_path / "prices.yaml"
    twice.write_text("prices:\n  amd: 2\n  amd: 3\n")
    with pytest.raises(PriceInvalid, match="priced twice"):
        cost.load_file(twice)


def test_price_files_read_with_or_without_the_prices_key(tmp_path):
    wrapped, flat, bad = tmp_path / "a.yaml", tmp_path / "b.yaml", tmp_path / "c.yaml"
    wrapped.write_text("prices:\n  nvidia: 2.5\n  amd: 2\n")
    flat.write_text("intel-gaudi: 1.2\n")
    bad.write_text("- nvidia\n")
    assert cost.load_file(wrapped) == {"nvidia": 2.5, "amd": 2.0}
    assert cost.prices_from(["amd=1.5"], wrapped).by_key == {"nvidia": 2.5, "amd": 1.5}  # the flag over the file
    assert cost.load_file(flat) == {"intel-gaudi": 1.2}
    with pytest.raises(PriceInvalid, match="must be a mapping"):
        cost.load_file(bad)
    with pytest.raises(PriceInvalid, match="cannot be read"):
        cost.load_file(tmp_path / "missing.yaml")
    with pytest.raises(PriceInvalid, match="must be a number"):
        cost.parse_mapping({"nvidia": True}, "prices")


def test_cli_refuses_a_bad_price_and_a_bad_target_before_reading_the_cluster(capsys):
    assert main(["plan", "--model", "llama-3.1-8b", "--demo", "--shapes", "--price", "nvidia=-2", "--no-predict"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: PLANNING_PRICE_INVALID") and "nvidia" in err and "Traceback" not in err
    assert main(["plan", "--model", "llama-3.1-8b", "--demo", "--shapes", "--tpot-ms", "0", "--no-predict"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: PLANNING_REQUEST_INVALID") and "tpot" in err


def test_cli_shapes_on_the_demo_rank_every_estimated_pool_with_costs(capsys):
    assert main(["plan", "--model", "llama-3.1-70b", "--demo", "--shapes", "--ttft-ms", "1000", "--tpot-ms", "50",
                 "--price", "nvidia=2.5", "--price", "amd=2.0", "--no-predict", "-o", "json"]) == 0
    found = json.loads(capsys.readouterr().out)["shapes"]
    pools = {s["pool"] for s in found["ranked"]}
    assert {"nvidia/NVIDIA H200", "amd/AMD_Instinct_MI300X_OAM", "intel-gaudi/Gaudi3"} <= pools
    assert {s["guide"] for s in found["ranked"]} == {"optimized-baseline", "pd-disaggregation"}  # a dense model: no wide-EP
    priced = [s for s in found["ranked"] if s["price_key"] == "nvidia"]
    # cost an hour is the shape's devices x the price
    assert priced and all(s["cost_per_hour"] == pytest.approx(s["devices"] * 2.5) for s in priced)
    assert all(s["estimate"] == "roofline" for s in found["ranked"])  # no AIC asked
    gaudi = [s for s in found["ranked"] if s["pool"] == "intel-gaudi/Gaudi3"]
    assert gaudi and all(s["cost_per_hour"] is None for s in gaudi)  # unpriced: ranked after every priced shape
    assert found["ranked"].index(gaudi[0]) > max(found["ranked"].index(s) for s in priced if s["meets"])
    assert "intel-xpu/Max 1550" in pools  # its profile now publishes a peak FLOP/s, so it is estimated too


@pytest.fixture
def client() -> TestClient:
    app = create_app()
    app.dependency_overrides[cluster_api.cluster_source] = lambda: ClusterSource(demo=True)
    return TestClient(app)


def test_api_answers_shapes_and_refuses_a_bad_price_as_problem_json(client):
    body = {"model": "llama-3.1-8b", "shapes": True, "prices": {"nvidia": 2.5}, "ttft": 1000, "tpot": 50}
    answer = client.post("/api/v1/planning/plan", json=body)
    assert answer.status_code == 200
    ranked = answer.json()["shapes"]["ranked"]
    assert ranked and ranked[0]["meets"] and ranked[0]["price_key"] == "nvidia"
    bad = client.post("/api/v1/planning/plan", json={**body, "prices": {"nvidia": "cheap"}})
    assert bad.status_code == 422 and bad.json()["code"] == "PLANNING_PRICE_INVALID"
    assert bad.headers["content-type"].startswith("application/problem+json")
    target = client.post("/api/v1/planning/plan", json={**body, "tpot": 0})
    assert target.status_code == 422
