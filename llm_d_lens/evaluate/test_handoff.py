"""Every scenario Lens emits, rendered through llm-d-benchmark's rules as docs/evaluate.md writes them down.

The renderer below is this test's own, built from the numbered rules in docs/evaluate.md ("What
llm-d-benchmark does with the scenario"), read from llm-d/llm-d-benchmark at 8bc9f1dd
(llmdbenchmark/parser/render_plans.py, parser/cluster_resource_resolver.py,
config/templates/values/defaults.yaml and overlays/intel-xpu.yaml, config/templates/jinja/13_ms-values.yaml.j2)
and llm-d-incubation/llm-d-modelservice at 3051935e (templates/_helpers.tpl, _helpers-dra.tpl). It
does not use Lens' overlay table: the facts it needs are written here, so a wrong table in Lens fails.
Each scenario is held to "no extended resource beside a claim" and "tensor parallelism kept, or
warned with a --set that keeps it".
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_d_lens.errors import LensError
from llm_d_lens.evaluate.config import build_config
from llm_d_lens.evaluate.test_benchmark import disaggregated
from llm_d_lens.hardware.registry import get_registry

REVISION = "8bc9f1ddd873a24f1657d6cca2e0d0fb6947dd36"

# Rule 3: the defaults that matter to the accelerator request (defaults.yaml at REVISION).
DEFAULTS: dict[str, Any] = {
    "accelerator": {"type": "nvidia", "resource": "nvidia.com/gpu"},
    "dra": {"enabled": False, "type": "nvidia"},
    "model": {"name": "Qwen/Qwen3-32B"},
    "decode": {"enabled": True, "replicas": 1,
               "acceleratorType": {"labelKey": "nvidia.com/gpu.product", "labelValue": "auto"},
               "parallelism": {"data": 1, "dataLocal": 1, "tensor": 1, "workers": 1}},
    "prefill": {"enabled": False, "replicas": 0,
                "acceleratorType": {"labelKey": "nvidia.com/gpu.product", "labelValue": "auto"},
                "parallelism": {"data": 1, "dataLocal": 1, "tensor": 1, "workers": 1}},
}
# Rule 5: the overlay files at REVISION, with what they set at the paths a Lens scenario writes.
OVERLAYS: dict[str, dict[str, Any]] = {
    "intel-xpu": {"model": {"name": "Qwen/Qwen3-0.6B"}, "decode": {"parallelism": {"tensor": 1}}},
}
# Rule 4: the resolver's table for an explicit profile with ``resource: auto``.
PROFILE_DRA_DRIVERS = {"intel-xpu": "gpu.intel.com"}
PROFILE_RESOURCES = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu", "intel-gaudi": "habana.ai/gaudi",
                     "google": "google.com/tpu", "intel-i915": "gpu.intel.com/i915", "intel-xe": "gpu.intel.com/xe"}
ROLES = ("decode", "prefill")


def merge(base: dict[str, Any], layer: dict[str, Any]) -> dict[str, Any]:
    """Rule 1: mappings merge, anything else replaces, a null is skipped."""
    out = copy.deepcopy(base)
    for key, value in layer.items():
        if value is None:
            continue
        if isinstance(out.get(key), dict) and isinstance(value, dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def expand_common(entry: dict[str, Any]) -> dict[str, Any]:
    entry = {k: v for k, v in entry.items() if k != "name"}
    common = entry.pop("common", None)
    return merge(entry, common) if common else entry


def resolve(values: dict[str, Any]) -> dict[str, Any]:
    """Rule 4: an explicit profile is the type; a draDriver turns DRA on, keeping given templates."""
    values = copy.deepcopy(values)
    accelerator = values["accelerator"]
    profile = accelerator.get("profile")
    if profile and profile != "auto":
        accelerator["type"] = profile
        if accelerator.get("resource") == "auto":
            if profile in PROFILE_DRA_DRIVERS:
                accelerator.pop("resource")
                accelerator["draDriver"] = PROFILE_DRA_DRIVERS[profile]
            elif profile in PROFILE_RESOURCES:
                accelerator["resource"] = PROFILE_RESOURCES[profile]
    if accelerator.get("draDriver") and accelerator.get("type"):
        dra = values.setdefault("dra", {})
        dra["enabled"], dra["type"] = True, accelerator["type"]
        dra.setdefault("claimTemplates", {accelerator["type"]: {"class": accelerator["draDriver"]}})
    return values


def overlays_for(profile: str | None) -> list[str]:
    """Rule 5: which overlay files apply, in merge order."""
    if not profile or profile == "auto":
        return []
    names = [profile]
    if profile.startswith("intel-") and profile not in ("intel-gaudi", "intel-xpu"):
        names.append("intel-xpu")
    return [name for name in reversed(names) if name in OVERLAYS]


def render(scenario: dict[str, Any], overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Rule 2's order for the scenario's one entry; returns each enabled role's model-server request."""
    values = merge(DEFAULTS, expand_common(scenario["scenario"][0]))
    if overrides:
        values = merge(values, overrides)
    values = resolve(values)
    for name in overlays_for(values["accelerator"].get("profile")):
        values = merge(values, OVERLAYS[name])
    if overrides:
        values = merge(values, overrides)
    return {role: pod(values, role) for role in ROLES
            if values[role].get("enabled", role == "decode") and values[role].get("replicas", 1)}


def pod(values: dict[str, Any], role: str) -> dict[str, Any]:
    """Rule 6 for one role: extended resources in its limits, the claim the chart adds, its parallelism."""
    accelerator, spec = values["accelerator"], values[role]
    parallelism = spec["parallelism"]
    default_count = (int(accelerator["count"]) if "count" in accelerator
                     else int(parallelism["tensor"]) * int(parallelism["dataLocal"]))
    count = int(spec["accelerator"].get("count", default_count)) if "accelerator" in spec else default_count
    chart_type = "cpu" if "count" in accelerator and int(accelerator["count"]) == 0 else accelerator.get("type", "nvidia")
    resource = (spec.get("accelerator") or {}).get("resource", accelerator.get("resource", ""))
    limits = {resource: count} if resource and count > 0 and accelerator.get("type") != "cpu" else {}
    claim = None
    dra = values.get("dra") or {}
    templates = dra.get("claimTemplates") or {}
    if dra.get("enabled") and chart_type in templates:
        template = templates[chart_type]
        claim = {"class": template.get("class"),
                 "count": template.get("count", int(parallelism["tensor"]) * int(parallelism["dataLocal"]))}
    return {"limits": limits, "claim": claim, "count": count, "tensor": parallelism["tensor"],
            "model": values["model"]["name"]}


def set_override(keep_with: str) -> dict[str, Any]:
    """A ``--set dotted.path=value`` as the override layer it is."""
    flag, assignment = keep_with.split(" ", 1)
    assert flag == "--set"
    path, value = assignment.split("=", 1)
    layer: dict[str, Any] = {}
    node = layer
    *parents, last = path.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = yaml.safe_load(value)
    return layer


def emitted(tmp_path: Path) -> list[tuple[str, Any]]:
    """Every scenario Lens emits for a built-in: each hardware × mode, at tensor 1 and 4 and disaggregated."""
    out = []
    for profile in get_registry().profiles():
        for mode in profile.effective_modes():
            shapes = {"tp1": {"tensor_parallel": 1}, "tp4": {"tensor_parallel": 4, "replicas": 2},
                      "pd": {"workload": disaggregated(tmp_path / f"{profile.id}-{mode}")}}
            for shape, args in shapes.items():
                label = f"{profile.id}/{mode}/{shape}"
                try:
                    config = build_config(hardware=profile.id, mode=mode, **args)
                    config.scenario()
                except LensError as exc:  # a mode llm-d-benchmark cannot run (a CPU DRA mode): refused, not emitted
                    assert exc.code == "BENCHMARK_PROFILE_MISSING", label
                    continue
                out.append((label, config))
    return out


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory) -> list[tuple[str, Any]]:
    return emitted(tmp_path_factory.mktemp("handoff"))


def test_every_builtin_hardware_and_mode_is_rendered(scenarios):
    rendered = {label.rsplit("/", 1)[0] for label, _ in scenarios}
    declared = {f"{p.id}/{m}" for p in get_registry().profiles() for m in p.effective_modes()}
    assert declared - rendered == {"cpu/dra"}  # refused with BENCHMARK_PROFILE_MISSING, as test_benchmark holds
    assert any(config.target.mode.request_model == "dra" for _, config in scenarios)


def test_no_extended_resource_beside_a_claim(scenarios):
    for label, config in scenarios:
        pods = render(yaml.safe_load(config.to_yaml()))
        assert pods, label
        for role, spec in pods.items():
            if config.target.mode.request_model == "dra":
                assert spec["claim"] is not None, f"{label} {role}: a DRA scenario rendered without a claim"
                assert spec["claim"]["class"] == config.target.mode.device_class, label
                assert spec["limits"] == {}, f"{label} {role}: {spec['limits']} beside the claim"
            elif config.target.uses_accelerators:
                assert spec["claim"] is None, label
                assert spec["limits"] == {config.target.resource: spec["count"]}, label
            else:
                assert (spec["claim"], spec["limits"], spec["count"]) == (None, {}, 0), label


def test_tensor_parallelism_is_kept_or_warned_with_a_set_that_keeps_it(scenarios):
    warned_somewhere = False
    for label, config in scenarios:
        scenario = yaml.safe_load(config.to_yaml())
        entry = scenario["scenario"][0]
        warnings = {w["path"]: w for w in config.summary()["warnings"]}
        pods = render(scenario)
        for role, spec in pods.items():
            ours = entry[role]["parallelism"]["tensor"]
            path = f"{role}.parallelism.tensor"
            if spec["tensor"] == ours:
                assert path not in warnings, f"{label}: warned about a tensor size that is kept"
                continue
            assert path in warnings, f"{label} {role}: tensor {ours} becomes {spec['tensor']} without a warning"
            warned_somewhere = True
            assert (warnings[path]["scenario_value"], warnings[path]["overlay_value"]) == (ours, spec["tensor"])
            assert f"# warning: {warnings[path]['message']}" in config.to_yaml()
            kept = render(scenario, set_override(warnings[path]["keep_with"]))
            assert kept[role]["tensor"] == ours, label
    assert warned_somewhere  # the overlay at this revision does reset a tensor size (intel-xpu, decode)


def test_a_workload_profiles_model_is_kept_or_warned(scenarios):
    for label, config in scenarios:
        scenario = yaml.safe_load(config.to_yaml())
        ours = scenario["scenario"][0].get("model", {}).get("name")
        if ours is None:
            continue
        warned = {w["path"]: w for w in config.summary()["warnings"]}
        if render(scenario)["decode"]["model"] != ours:
            assert "model.name" in warned, label
            assert render(scenario, set_override(warned["model.name"]["keep_with"]))["decode"]["model"] == ours
        else:
            assert "model.name" not in warned, label


@pytest.mark.parametrize("resource", ["leave out", None])
def test_the_renderer_puts_the_default_resource_beside_a_claim_unless_the_scenario_clears_it(resource):
    # the observation, through the same rules: a DRA scenario without resource (or with a
    # null, which the merge skips) gets the default nvidia.com/gpu beside its claim
    scenario = yaml.safe_load(build_config(hardware="amd", mode="dra", tensor_parallel=2).to_yaml())
    accelerator = scenario["scenario"][0]["accelerator"]
    assert accelerator["resource"] == ""
    if resource == "leave out":
        del accelerator["resource"]
    else:
        accelerator["resource"] = resource
    decode = render(scenario)["decode"]
    assert decode["claim"] == {"class": "gpu.amd.com", "count": 2}
    assert decode["limits"] == {"nvidia.com/gpu": 2}


def test_the_documented_rules_name_the_revision_this_test_follows():
    text = (Path(__file__).resolve().parents[2] / "docs" / "evaluate.md").read_text(encoding="utf-8")
    assert REVISION in text
    for rule in ("null never clears a default; an empty string does", "overlays/<profile>.yaml",
                 "`decode.parallelism.tensor: 1`", "`<resource>: <count>`"):
        assert rule in text
