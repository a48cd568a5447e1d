"""`lens hardware ...`: exit codes and output, in-process and as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from llm_d_lens.cli.app import main
from llm_d_lens.testing.plugins import minimal_profile
from llm_d_lens.hardware.test_contract import GUIDE_MINIMAL


def run(capsys, *args) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_as_json_carries_every_profile_id(capsys):
    code, out, _ = run(capsys, "hardware", "list", "--output", "json")
    assert code == 0
    assert [p["id"] for p in json.loads(out)] == ["amd", "cpu", "google-tpu", "intel-gaudi", "intel-xpu", "nvidia"]


def test_list_as_a_table_names_each_hardware(capsys):
    code, out, _ = run(capsys, "hardware", "list")
    assert code == 0
    for name in ("NVIDIA GPU", "AMD Instinct GPU", "Intel Gaudi", "Google Cloud TPU", "gpu/amd", "tpu-v6e/google"):
        assert name in out


def test_show_by_alias_as_yaml(capsys):
    code, out, _ = run(capsys, "hardware", "show", "rocm", "-o", "yaml")
    document = yaml.safe_load(out)
    assert code == 0 and document["id"] == "amd" and document["upstream_variant"] == "amd"


def test_show_unknown_exits_1_with_the_error_code_and_no_traceback(capsys):
    code, out, err = run(capsys, "hardware", "show", "nvidai")
    assert code == 1 and out == ""
    assert err.startswith("error: ACCELERATOR_NOT_REGISTERED") and "nvidia" in err
    assert "Traceback" not in err


def test_resolve_reports_each_query(capsys):
    code, out, _ = run(capsys, "hardware", "resolve", "--resource", "nvidia.com/mig-1g.10gb", "--resource", "example.com/x",
                       "--label", "llm-d.ai/accelerator-variant=gpu", "--label", "llm-d.ai/accelerator-vendor=amd",
                       "--device-class", "gaudi.intel.com", "--aic-system", "mi300x", "--output", "json")
    rows = json.loads(out)
    assert code == 0
    assert [(r["query"], r["status"], r["id"]) for r in rows] == [
        ("device_class", "supported", "intel-gaudi"),
        ("resource", "supported", "nvidia"),
        ("resource", "unsupported", None),
        ("labels", "supported", "amd"),
        ("aic_system", "supported", "amd"),
    ]


def test_resolve_an_unknown_explicit_key_exits_1(capsys):
    code, _, err = run(capsys, "hardware", "resolve", "--key", "quantum")
    assert code == 1 and "ACCELERATOR_NOT_REGISTERED" in err


def test_resolve_with_a_malformed_label_is_a_usage_error(capsys):
    code, _, err = run(capsys, "hardware", "resolve", "--label", "novalue")
    assert code == 2 and "expected KEY=VALUE" in err


def test_validate_reports_all_errors_and_exits_1(tmp_path, capsys):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(GUIDE_MINIMAL))
    bad = tmp_path / "bad.json"
    payload = dict(GUIDE_MINIMAL, colour="red", request_model="magic")
    bad.write_text(json.dumps(payload))
    code, out, _ = run(capsys, "hardware", "validate", str(good), str(bad), "-o", "json")
    results = json.loads(out)
    assert code == 1
    # valid, with the one warning a new vendor gets: llm-d-benchmark does not know its profile yet
    assert {k: v for k, v in results[0].items() if k != "warnings"} == {"file": str(good), "valid": True, "id": "myvendor", "issues": []}
    assert [(w["path"], w["value"]) for w in results[0]["warnings"]] == [("$.benchmark_profile", "myvendor")]
    assert [i["path"] for i in results[1]["issues"]] == ["$.colour", "$.request_model"]


def test_validate_catches_a_conflict_with_installed_hardware(tmp_path, capsys):
    path = tmp_path / "clash.json"
    path.write_text(json.dumps(minimal_profile("clash", device_classes=["gpu.amd.com"])))
    code, out, _ = run(capsys, "hardware", "validate", str(path))
    assert code == 1
    assert "registration conflict: device class" in out and "'amd'" in out


def test_validate_catches_files_that_conflict_with_each_other(tmp_path, capsys):
    # a plugin shipping two profiles: each is fine alone, together they cannot both be registered
    first, second, again = tmp_path / "acme.json", tmp_path / "acme-next.json", tmp_path / "acme-copy.json"
    first.write_text(json.dumps(minimal_profile("acme", device_classes=["npu.acme.example"])))
    second.write_text(json.dumps(minimal_profile("acme-next", device_classes=["npu.acme.example"])))
    again.write_text(first.read_text())  # the same payload twice is one profile, not a conflict
    code, out, _ = run(capsys, "hardware", "validate", str(first), str(again), str(second), "-o", "json")
    results = json.loads(out)
    assert code == 1
    assert [(r["id"], r["valid"]) for r in results] == [("acme", True), ("acme", True), ("acme-next", False)]
    message = results[2]["issues"][0]["message"]
    assert message.startswith("registration conflict: device class") and f"'acme' ({first}" in message


def test_validate_prints_warnings_and_json_carries_them_without_failing(tmp_path, capsys):
    payload = minimal_profile("acme", benchmark_profile="nvidai", evaluation_profile=None)
    payload["deployment"] = dict(payload["deployment"], arch="acme-gpu")  # not the overlay directory acme-npu
    path = tmp_path / "acme.json"
    path.write_text(json.dumps(payload))
    code, out, _ = run(capsys, "hardware", "validate", str(path), "-o", "json")
    [result] = json.loads(out)
    assert code == 0 and result["valid"] is True
    found = {w["path"]: w for w in result["warnings"]}
    assert set(found) == {"$.benchmark_profile", "$.deployment.arch"}
    assert found["$.benchmark_profile"]["value"] == "nvidai" and "nearest: nvidia" in found["$.benchmark_profile"]["message"]
    assert found["$.deployment.arch"]["value"] == "acme-gpu"
    code, out, _ = run(capsys, "hardware", "validate", str(path))
    assert code == 0
    assert 'warning: $.deployment.arch: differs from upstream_variant' in out and '(value: "acme-gpu")' in out


def test_validate_a_missing_file(tmp_path, capsys):
    code, out, _ = run(capsys, "hardware", "validate", str(tmp_path / "nope.json"))
    assert code == 1 and "cannot read the file" in out


def test_doctor_reports_six_profiles_and_no_problems(capsys):
    code, out, _ = run(capsys, "hardware", "doctor", "-o", "json")
    report = json.loads(out)
    assert code == 0 and report["ok"] is True
    assert [p["id"] for p in report["profiles"]] == ["amd", "cpu", "google-tpu", "intel-gaudi", "intel-xpu", "nvidia"]
    assert report["failures"] == [] and report["skipped"] == []


def test_doctor_shows_a_broken_plugin_and_exits_1(plugins, capsys):
    plugins.make("broken-lens", version="0.0.1", module_source="def load():\n    raise ValueError('no profiles today')\n",
                 profile_entry_points={"broken": "broken_lens_lens:load"})
    code, out, _ = run(capsys, "hardware", "doctor")
    assert code == 1
    assert "broken" in out and "broken-lens 0.0.1" in out and "no profiles today" in out


HIJACK = "class Provider:\n    def profile(self): ...\n"


def test_doctor_keeps_the_built_in_provider_serving_when_a_rival_one_is_refused(plugins, capsys):
    plugins.make("hijack-lens", provider_entry_points={"nvidia": "hijack_lens_lens:Provider"}, module_source=HIJACK)
    code, out, _ = run(capsys, "hardware", "doctor", "-o", "json")
    report = json.loads(out)
    assert code == 1  # a refused plugin is still a problem to fix
    nvidia = next(p for p in report["profiles"] if p["id"] == "nvidia")
    assert (nvidia["provider"], nvidia["provider_status"]) == ("NvidiaProvider", "serving")
    assert nvidia["provider_distribution"].startswith("llm-d-lens ")
    [refused] = nvidia["refused_providers"]
    assert refused["distribution"] == "hijack-lens 1.0.0" and "declared by Lens itself" in refused["reason"]
    by_dist = {d["distribution"]: d for d in report["distributions"]}
    assert [r["id"] for r in by_dist["hijack-lens 1.0.0"]["refused"]] == ["nvidia"]
    assert by_dist["hijack-lens 1.0.0"]["serves"] == [] and by_dist["hijack-lens 1.0.0"]["profiles"] == []
    lens_itself = by_dist[nvidia["provider_distribution"]]
    assert {"id": "nvidia", "provider": "NvidiaProvider"} in lens_itself["serves"] and "amd" in lens_itself["profiles"]
    code, out, _ = run(capsys, "hardware", "doctor")
    nvidia_line = next(line for line in out.splitlines() if line.startswith("│ nvidia"))
    assert "NvidiaProvider" in nvidia_line and "failed" not in nvidia_line
    assert "refused provider 'nvidia'" in out


def test_show_names_the_serving_provider_and_the_refused_rival(plugins, capsys):
    plugins.make("hijack-lens", provider_entry_points={"nvidia": "hijack_lens_lens:Provider"}, module_source=HIJACK)
    code, out, _ = run(capsys, "hardware", "show", "cuda", "-o", "json")
    served = json.loads(out)["served_by"]
    assert code == 0
    assert (served["provider"], served["status"]) == ("NvidiaProvider", "serving")
    assert [r["distribution"] for r in served["refused"]] == ["hijack-lens 1.0.0"]
    code, out, _ = run(capsys, "hardware", "show", "amd", "-o", "json")
    assert json.loads(out)["served_by"]["status"] == "default"
    code, out, _ = run(capsys, "hardware", "show", "nvidia")
    assert "NvidiaProvider from entry point 'nvidia' of llm-d-lens" in out


def test_a_provider_that_fails_to_import_is_shown_failed(plugins, capsys):
    plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme")]},
                 provider_entry_points={"acme": "acme_lens_lens:missing"})
    code, out, _ = run(capsys, "hardware", "doctor", "-o", "json")
    acme = next(p for p in json.loads(out)["profiles"] if p["id"] == "acme")
    assert code == 1 and acme["provider"] is None and acme["provider_status"] == "failed"
    acme_dist = next(d for d in json.loads(out)["distributions"] if d["distribution"] == "acme-lens 1.0.0")
    assert acme_dist["failed"] == [{"id": "acme", "provider": None}] and acme_dist["refused"] == []
    code, out, _ = run(capsys, "hardware", "show", "acme", "-o", "json")
    served = json.loads(out)["served_by"]
    assert code == 0 and served["status"] == "failed" and "missing" in served["reason"]


def test_hardware_commands_never_import_the_web_server_or_http_or_kubernetes_clients():
    probe = (
        "import sys\n"
        "from llm_d_lens.cli.app import main\n"
        "codes = [main(['hardware', 'list', '-o', 'json']), main(['hardware', 'resolve', '--resource', 'amd.com/gpu'])]\n"
        "heavy = sorted(m for m in ('fastapi', 'uvicorn', 'httpx', 'kubernetes', 'starlette') if m in sys.modules)\n"
        "print('HEAVY=' + ','.join(heavy), codes, file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert "HEAVY= [0, 0]" in result.stderr, result.stderr


@pytest.mark.parametrize("args,code", [(["hardware", "list"], 0), (["hardware", "show", "zzz"], 1)])
def test_the_installed_console_script(args, code):
    result = subprocess.run([sys.executable, "-m", "llm_d_lens.cli", *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == code
    assert "Traceback" not in result.stderr
