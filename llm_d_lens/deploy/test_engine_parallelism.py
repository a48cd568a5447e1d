"""``--count`` against the engine's own parallel sizes, on real ``kubectl kustomize`` renders of upstream llm-d.

Expected flags were read by hand from the upstream files: ``optimized-baseline/modelserver/gpu/vllm/base``
asks for ``nvidia.com/gpu: 2`` and starts vLLM with ``--tensor-parallel-size=2`` (an args list);
``tiered-prefix-cache/.../gpu/vllm/native/cpu/base`` passes the same flag inside an ``sh -c`` script;
``optimized-baseline/modelserver/tpu/v7/vllm`` asks for ``google.com/tpu: 4`` with
``--tensor-parallel-size=8`` (two TensorCores per chip), a pairing upstream means.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from llm_d_lens.deploy.conftest import kustomize_skip_reason
from llm_d_lens.deploy.service import RenderRequest, render
from llm_d_lens.deploy.shape import parallel_flags, parallelism
from llm_d_lens.deploy.test_conformance import ROOT

needs_tree = pytest.mark.skipif(ROOT is None, reason="no llm-d tree: ../shared/upstream/llm-d is absent and $LENS_LLM_D_ROOT is unset")
needs_kustomize = pytest.mark.skipif(kustomize_skip_reason() is not None, reason=kustomize_skip_reason() or "")
CODE = "ENGINE_PARALLELISM_MISMATCH"


def test_flags_are_read_from_args_lists_and_from_shell_scripts():
    script = {"command": ["/bin/sh", "-c"], "args": ["exec vllm serve \\\n  m \\\n  --tensor-parallel-size 4 \\\n  --port 8000\n"]}
    assert parallel_flags(script) == {"tp": ("--tensor-parallel-size", "4")}
    assert parallelism(script) == 4
    assert parallelism({"args": ["--tensor-parallel-size=2", "--pipeline-parallel-size", "2"]}) == 4
    # vLLM's local data-parallel ranks each drive a tensor group; a shell variable is stated but unknown
    assert parallelism({"args": ["--tensor-parallel-size=1", "--data-parallel-size-local=8"]}) == 8
    assert parallelism({"args": ["sh", "-c", "vllm serve m --tensor-parallel-size $TP_SIZE"]}) is None
    assert parallel_flags({"args": ["sh", "-c", "vllm serve m --tensor-parallel-size $TP_SIZE"]}) == {
        "tp": ("--tensor-parallel-size", "$TP_SIZE")}


def warnings_of(guide: str, hardware: str, overlay: str, count: int | None, model_server: str = "vllm") -> tuple[list, object]:
    result = render(RenderRequest(guide=guide, hardware=hardware, model_server=model_server, overlay=overlay, count=count),
                    root=ROOT)
    return [w for w in result.warnings if w.code == CODE], result


def engine_args(result) -> list[str]:
    (pod,) = [o for o in result.objects if o.get("kind") == "Deployment" and "decode" in o["metadata"]["name"]]
    container = pod["spec"]["template"]["spec"]["containers"][0]
    return [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]


@needs_tree
@needs_kustomize
def test_a_count_the_engine_was_not_sized_for_warns_and_leaves_the_flag_as_upstream_wrote_it():
    warnings, result = warnings_of("optimized-baseline", "nvidia", "base", 4)
    assert [w.where for w in warnings] == ["Deployment/optimized-baseline-nvidia-gpu-vllm-decode"]
    assert warnings[0].severity == "warning"
    assert "--count 4 gives container modelserver 4 device(s) where the overlay gave 2" in warnings[0].message
    assert "--tensor-parallel-size=2" in warnings[0].message
    assert result.fitted.counts == {"Deployment/optimized-baseline-nvidia-gpu-vllm-decode": 4}
    assert "--tensor-parallel-size=2" in engine_args(result)  # warned about, never rewritten


@needs_tree
@needs_kustomize
@pytest.mark.parametrize("count", [None, 2])
def test_the_overlays_own_count_does_not_warn(count):
    warnings, result = warnings_of("optimized-baseline", "nvidia", "base", count)
    assert warnings == []
    assert set(result.fitted.counts.values()) == {2}


@needs_tree
@needs_kustomize
def test_a_flag_inside_a_shell_script_is_found():
    warnings, result = warnings_of("tiered-prefix-cache", "nvidia", "native/cpu/base", 4)
    assert len(warnings) == 1 and "--tensor-parallel-size=2, sized for the overlay's 2" in warnings[0].message
    assert any("--tensor-parallel-size=2" in arg for arg in engine_args(result))


@needs_tree
@needs_kustomize
def test_upstreams_own_pairing_of_request_and_flag_is_kept_even_when_they_differ():
    warnings, result = warnings_of("optimized-baseline", "google-tpu", "v7", None)
    assert warnings == [] and set(result.fitted.counts.values()) == {4}
    warnings, _ = warnings_of("optimized-baseline", "google-tpu", "v7", 8)
    assert len(warnings) == 1 and "where the overlay gave 4" in warnings[0].message
    assert "--tensor-parallel-size=8, sized for the overlay's 4" in warnings[0].message


@needs_tree
@needs_kustomize
def test_the_cli_says_it_on_stderr_and_still_renders():
    argv = [sys.executable, "-m", "llm_d_lens.cli", "deploy", "render", "--guide", "optimized-baseline",
            "--hardware", "nvidia", "--model-server", "vllm", "--overlay", "base", "--count", "4", "--llm-d-root", str(ROOT)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if CODE in line]
    assert len(lines) == 1 and lines[0].startswith("# warning: Deployment/optimized-baseline-nvidia-gpu-vllm-decode: --count 4")
    assert CODE not in done.stdout and "nvidia.com/gpu: 4" in done.stdout


def test_sizes_set_in_the_containers_env_are_known():
    script = {"args": ["sh", "-c", "vllm serve m --tensor-parallel-size $TP_SIZE --data-parallel-size-local ${DPL}"],
              "env": [{"name": "TP_SIZE", "value": "2"}, {"name": "DPL", "value": "4"}]}
    assert parallelism(script) == 8
    assert parallelism({**script, "env": [{"name": "TP_SIZE", "value": "2"}]}) is None  # DPL is not known


@needs_tree
@needs_kustomize
def test_a_wide_ep_count_change_warns_on_sizes_its_env_sets():
    # wide-ep-lws/.../vllm/gke: TP_SIZE=1 and DP_SIZE_LOCAL=8 in each LeaderWorkerSet's env, 8 GPUs a pod
    warnings, _ = warnings_of("wide-ep-lws", "nvidia", "gke", 4)
    assert sorted(w.where.split(" ")[0] for w in warnings) == ["LeaderWorkerSet/wide-ep-llm-d-decode",
                                                               "LeaderWorkerSet/wide-ep-llm-d-prefill"]
    assert all("sized for the overlay's 8" in w.message for w in warnings)
    assert warnings_of("wide-ep-lws", "nvidia", "gke", 8)[0] == []
