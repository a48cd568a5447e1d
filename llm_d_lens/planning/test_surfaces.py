"""`lens plan` and `/api/v1/planning`: the same plan on both edges, bad input coded, AIC's absence honest."""

from __future__ import annotations

import json
import sys

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.cli.app import main
from llm_d_lens.serving import api as cluster_api
from llm_d_lens.cluster.source import ClusterSource
from llm_d_lens.planning import aic
from llm_d_lens.planning.errors import PredictionsUnavailable
from llm_d_lens.planning.test_architecture import LLAMA_8B


@pytest.fixture
def client() -> TestClient:
    app = create_app()
    app.dependency_overrides[cluster_api.cluster_source] = lambda: ClusterSource(demo=True)
    return TestClient(app)


def test_cli_plans_a_catalogue_model_on_the_demo_as_json(capsys):
    assert main(["plan", "--model", "llama-3.1-8b", "--demo", "--context", "4096", "--concurrency", "8", "-o", "json",
                 "--no-predict"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["request"] == {"context": 4096, "concurrency": 8, "dtype": "bf16", "kv_dtype": "bf16",
                               "memory_utilization": 0.9, "overhead_gib": 0.0,
                               "max_num_batched_tokens": None, "max_num_seqs": None}
    assert data["source"]["kind"] == "demo"
    tpu = next(p for p in data["pools"] if p["profile_id"] == "google-tpu")
    # 8B in bf16 (14.96 GiB) fits one 32 GiB TPU v6e chip. A device under 70 GiB gets vLLM's small defaults
    # (256 seqs, 2048 tokens): activation 256 x 128256 x 38.2 B + 2048 x 4096 x 2.7 B = 1.19 GiB; the TPU
    # profile measured no engine memory, so the generic 0.5 GiB: 28.8 - 14.96 - 1.19 - 0.5 = 12.15 GiB for KV
    assert (tpu["best"]["tensor_parallel"], tpu["best"]["pipeline_parallel"]) == (1, 1)
    assert tpu["best"]["activation_gib"] == 1.19 and tpu["best"]["non_torch_gib"] == 0.5
    assert tpu["best"]["max_concurrency"] == 24  # 12.15 GiB / (4096 x 128 KiB = 0.5 GiB)
    assert data["predictions"]["state"] == aic.status().state and "not asked" in data["predictions"]["message"]


def test_cli_table_names_every_pool_and_the_sources(capsys):
    assert main(["plan", "--model", "qwen3-32b", "--demo", "--dtype", "fp8", "--no-predict"]) == 0
    out = capsys.readouterr().out
    for pool in ("amd/AMD_Instinct_MI300X_OAM", "intel-gaudi/Gaudi3", "nvidia/NVIDIA H200", "google-tpu/tpu-v6e-slice"):
        assert pool in out
    assert "memory from memory-model:Gaudi3" in out and "fp8 weights" in out
    assert "lens deploy render --guide optimized-baseline --hardware" in out


def test_cli_bad_input_is_one_coded_line_and_a_non_zero_exit(capsys, tmp_path):
    assert main(["plan", "--model", "llama-3.1-7b", "--demo"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: PLANNING_MODEL_UNKNOWN") and "Traceback" not in err
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({**LLAMA_8B, "num_hidden_layers": -1}))
    assert main(["plan", "--model", str(bad), "--demo"]) == 1
    assert f"{bad}: num_hidden_layers: -1 must be at least 1" in capsys.readouterr().err
    assert main(["plan", "--model", "llama-3.1-8b", "--demo", "--context", "0"]) == 1
    assert "PLANNING_REQUEST_INVALID: context: 0" in capsys.readouterr().err


def test_cli_lists_the_catalogue(capsys):
    assert main(["plan", "models", "-o", "json"]) == 0
    ids = [m["id"] for m in json.loads(capsys.readouterr().out)]
    assert "llama-3.1-70b" in ids and "deepseek-v3" in ids


def test_api_plan_matches_the_cli(client, capsys):
    response = client.post("/api/v1/planning/plan", json={"model": "llama-3.1-70b", "concurrency": 16})
    assert response.status_code == 200
    main(["plan", "--model", "llama-3.1-70b", "--demo", "--concurrency", "16", "-o", "json", "--no-predict"])
    assert response.json()["pools"] == json.loads(capsys.readouterr().out)["pools"]


def test_api_takes_an_inline_config_and_names_its_fields(client):
    ok = client.post("/api/v1/planning/plan", json={"config": LLAMA_8B})
    assert ok.status_code == 200 and ok.json()["model"]["parameters"] == 8030261248
    bad = client.post("/api/v1/planning/plan", json={"config": {**LLAMA_8B, "hidden_size": "big"}})
    assert bad.status_code == 422 and bad.headers["content-type"] == "application/problem+json"
    assert bad.json()["code"] == "PLANNING_MODEL_CONFIG_INVALID" and bad.json()["details"]["path"] == "hidden_size"


def test_api_unknown_model_says_how_to_send_a_config_not_a_flag(client):
    detail = client.post("/api/v1/planning/plan", json={"model": "llama-9"}).json()["detail"]
    assert "send its config.json object as config" in detail and "--model" not in detail


@pytest.mark.parametrize("body,code", [
    ({"model": "nope-1b"}, "PLANNING_MODEL_UNKNOWN"),
    ({"model": "llama-3.1-8b", "context": "8192"}, "REQUEST_INVALID"),
    ({"model": "llama-3.1-8b", "concurrency": 10**12}, "REQUEST_INVALID"),
    ({"model": "llama-3.1-8b", "context": 0}, "REQUEST_INVALID"),
    ({"model": "llama-3.1-8b", "config": LLAMA_8B}, "PLANNING_REQUEST_INVALID"),
    ({}, "PLANNING_REQUEST_INVALID"),
    ({"model": "/etc/passwd"}, "PLANNING_MODEL_UNKNOWN"),
    ({"model": "llama-3.1-8b", "dtype": "fp7"}, "PLANNING_REQUEST_INVALID"),
])
def test_api_bad_bodies_are_problem_documents(client, body, code):
    response = client.post("/api/v1/planning/plan", json=body)
    assert 400 <= response.status_code < 500 and response.json()["code"] == code


def test_api_lists_models_and_aic_state(client):
    assert any(m["id"] == "mixtral-8x7b" for m in client.get("/api/v1/planning/models").json())
    assert client.get("/api/v1/planning/aic").json()["state"] == aic.status().state


@pytest.mark.skipif(aic.status().state != "not-installed", reason="aiconfigurator is installed here")
def test_without_the_extra_aic_says_so_with_a_code_and_predicts_nothing():
    current = aic.status()
    assert current.code == "PLANNING_AIC_NOT_INSTALLED" and "llm-d-lens[planning]" in current.message
    with pytest.raises(PredictionsUnavailable) as caught:
        aic.load()
    assert caught.value.code == "PLANNING_AIC_NOT_INSTALLED" and caught.value.http_status == 503
    assert "aiconfigurator" not in sys.modules


def test_an_install_whose_package_fails_to_import_is_reported_broken(tmp_path, monkeypatch):
    # a real distribution on sys.path, read by importlib.metadata, whose package raises on import
    info = tmp_path / "aiconfigurator-9.9.9.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: aiconfigurator\nVersion: 9.9.9\n")
    (tmp_path / "aiconfigurator").mkdir()
    (tmp_path / "aiconfigurator" / "__init__.py").write_text("raise ImportError('libcuda.so.1 not found')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "aiconfigurator", raising=False)
    assert aic.status().to_dict()["version"] == "9.9.9"
    with pytest.raises(PredictionsUnavailable) as caught:
        aic.load()
    assert caught.value.code == "PLANNING_AIC_BROKEN" and "libcuda.so.1" in caught.value.message


def test_api_prediction_targets_are_checked_and_unknown_jobs_are_404(client):
    bad = client.post("/api/v1/planning/plan", json={"model": "qwen3-32b", "predict": True, "backend": "tensorrt"})
    assert bad.status_code == 422 and bad.json()["details"]["field"] == "backend"
    assert client.post("/api/v1/planning/plan", json={"model": "qwen3-32b", "predict": True, "ttft": 0}).status_code == 422
    missing = client.get("/api/v1/planning/jobs/0123abcd")
    assert missing.status_code == 404 and missing.json()["code"] == "PLANNING_JOB_NOT_FOUND"


@pytest.mark.skipif(aic.status().available, reason="aiconfigurator is installed here")
def test_api_without_the_extra_still_plans_and_says_predictions_need_it(client):
    response = client.post("/api/v1/planning/plan", json={"model": "qwen3-32b", "predict": True})
    assert response.status_code == 200 and response.json()["pools"]
    assert response.json()["predictions"]["code"] == "PLANNING_AIC_NOT_INSTALLED"


@pytest.mark.skipif(not aic.status().available, reason="aiconfigurator is not installed (pip install 'llm-d-lens[planning]')")
def test_api_predictions_run_as_a_job_the_client_polls(client):
    import time

    response = client.post("/api/v1/planning/plan", json={"model": "qwen3-32b", "predict": True})
    predictions = response.json()["predictions"]
    assert response.status_code == 200 and predictions["state"] == "running" and predictions["poll"].endswith(predictions["job"])
    for _ in range(300):  # at most ~10 minutes on a loaded 2-core machine
        polled = client.get(predictions["poll"]).json()
        if polled["state"] == "done":
            break
        time.sleep(2)
    assert polled["state"] == "done"
    assert polled["pools"]["nvidia/NVIDIA H200"]["state"] == "predicted"


@pytest.mark.skipif(aic.status().available, reason="aiconfigurator is installed here")
def test_an_aic_that_fails_in_its_worker_leaves_the_memory_fit_standing(tmp_path, monkeypatch, capsys):
    # a real distribution whose package imports but lacks AIC's internals: the worker's search fails
    info = tmp_path / "aiconfigurator-0.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: aiconfigurator\nVersion: 0.0.1\n")
    (tmp_path / "aiconfigurator").mkdir()
    (tmp_path / "aiconfigurator" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "aiconfigurator", raising=False)
    try:
        assert main(["plan", "--model", "qwen3-32b", "--demo", "-o", "json"]) == 0
    finally:
        aic.engine().close()
    data = json.loads(capsys.readouterr().out)
    assert data["predictions"]["state"] == "failed" and data["predictions"]["code"] == "PLANNING_AIC_FAILED"
    assert "aiconfigurator_core" in data["predictions"]["message"]
    assert any(p["best"] for p in data["pools"])


def test_the_printed_hand_off_is_never_wrapped_and_names_the_planned_model(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["plan", "--model", "llama-3.1-405b", "--demo", "--dtype", "fp8", "--context", "100000", "--no-predict"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # the render command runs past 80 columns; it still sits whole on one line of its own, and carries the plan
    deploy = ("lens deploy render --guide optimized-baseline --hardware amd --model meta-llama/Llama-3.1-405B "
              "--tensor-parallel 4 --max-model-len 100000 --replicas 1")
    assert len(deploy) > 80 and deploy in lines
    assert max(len(line) for line in lines if not line.startswith("lens ")) <= 80


def test_the_api_takes_discover_as_the_cli_does(client):
    answer = client.post("/api/v1/planning/plan", json={"model": "llama-3.2-1b", "discover": True})
    assert answer.status_code == 200
    assert any("node discovery skipped" in note for note in answer.json()["notes"])  # the demo is no live cluster
    assert not any("discovery" in note for note in client.post("/api/v1/planning/plan", json={"model": "llama-3.2-1b"}).json()["notes"])
    refused = client.post("/api/v1/planning/plan", json={"model": "llama-3.2-1b", "discover": "yes"})
    assert refused.status_code == 422 and "discover" in refused.text
