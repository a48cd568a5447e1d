"""``lens deploy render --model/--tensor-parallel/...``: the engine serves what was asked, where the overlay writes it.

The shapes the unit tests use are the three ways upstream llm-d writes an engine's values (read by
hand from the tree): an args list after ``command: [vllm, serve]`` with the model as the first
argument (``optimized-baseline/modelserver/gpu/vllm/base``), an ``sh -c`` script with backslash
continuations and ``$TP_SIZE`` from the container's env (``wide-ep-lws/.../vllm/base/decode.yaml``),
and ``--model-path=`` for SGLang. The tree tests render upstream with the real ``kubectl kustomize``.
"""

from __future__ import annotations

import copy
import json
import shlex

import pytest
import yaml

from llm_d_lens.cli.app import main
from llm_d_lens.deploy.conftest import kustomize_skip_reason
from llm_d_lens.deploy.engine_args import EngineArgumentFixed, EngineChoice, apply_choice, label_value, stated_sizes
from llm_d_lens.deploy.engines import model_of_container
from llm_d_lens.deploy.service import RenderRequest, render
from llm_d_lens.deploy.test_conformance import ROOT
from llm_d_lens.deploy.workloads import pod_templates
from llm_d_lens.k8s.engine import engine_tokens, stated_flags

needs_tree = pytest.mark.skipif(ROOT is None, reason="no llm-d tree: ../shared/upstream/llm-d is absent and $LENS_LLM_D_ROOT is unset")
needs_kustomize = pytest.mark.skipif(kustomize_skip_reason() is not None, reason=kustomize_skip_reason() or "")
MISMATCH = "ENGINE_PARALLELISM_MISMATCH"

SCRIPT = ("set -e\nexec vllm serve \\\n  deepseek-ai/DeepSeek-R1-0528 \\\n  --port 8200 \\\n"
          "  --tensor-parallel-size $TP_SIZE \\\n  --data-parallel-size $((LWS_GROUP_SIZE * DP_SIZE_LOCAL)) \\\n"
          "  --data-parallel-size-local $DP_SIZE_LOCAL \\\n  --enable-expert-parallel\n")


def deployment(container: dict, kind: str = "Deployment", model_label: str = "Qwen3-32B") -> dict:
    labels = {"llm-d.ai/model": model_label, "llm-d.ai/role": "decode"}
    template = {"metadata": {"labels": dict(labels)}, "spec": {"containers": [container]}}
    spec = ({"replicas": 8, "selector": {"matchLabels": dict(labels)}, "template": template} if kind != "LeaderWorkerSet"
            else {"replicas": 1, "leaderWorkerTemplate": {"size": 2, "workerTemplate": template}})
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "decode", "labels": dict(labels)}, "spec": spec}


def args_list() -> dict:
    return {"name": "modelserver", "command": ["vllm", "serve"],
            "args": ["Qwen/Qwen3-32B", "--disable-access-log-for-endpoints=/health", "--tensor-parallel-size=2"]}


def script_container() -> dict:
    return {"name": "vllm", "command": ["/bin/bash", "-c"], "args": [SCRIPT],
            "env": [{"name": "DP_SIZE_LOCAL", "value": "8"}, {"name": "TP_SIZE", "value": "1"},
                    {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "t", "key": "k"}}}]}


def applied(obj: dict, choice: EngineChoice):
    pods = [(pod, pod.containers()[:1]) for pod in pod_templates(obj)]
    return apply_choice(pods, [obj], choice)


def container_of(obj: dict) -> dict:
    return next(iter(pod_templates(obj))).containers()[0]


def test_an_args_list_gets_the_model_and_sizes_in_place_and_a_missing_flag_appended():
    obj = deployment(args_list())
    done = applied(obj, EngineChoice("meta-llama/Llama-3.1-70B", 4, 2, 8192, 3))
    container = container_of(obj)
    assert container["args"] == ["meta-llama/Llama-3.1-70B", "--disable-access-log-for-endpoints=/health",
                                 "--tensor-parallel-size=4", "--pipeline-parallel-size=2", "--max-model-len=8192"]
    assert container["command"] == ["vllm", "serve"]
    assert done.sizes == {"Deployment/decode container modelserver": 8}
    assert obj["spec"]["replicas"] == 3
    # the label moves in labels and selectors together, so the Deployment still selects its pods
    assert obj["metadata"]["labels"]["llm-d.ai/model"] == "Llama-3.1-70B"
    assert obj["spec"]["selector"]["matchLabels"] == obj["spec"]["template"]["metadata"]["labels"]
    assert obj["spec"]["template"]["metadata"]["labels"]["llm-d.ai/model"] == "Llama-3.1-70B"
    assert any("the overlay's Qwen/Qwen3-32B" in note for note in done.notes)


def test_a_script_is_rewritten_word_for_word_and_a_variable_through_its_env():
    obj = deployment(script_container(), kind="LeaderWorkerSet", model_label="DeepSeek-R1-0528")
    done = applied(obj, EngineChoice("org/Other-Model", 2, replicas=2))
    container = container_of(obj)
    words = engine_tokens(container)
    assert words[words.index("serve") + 1] == "org/Other-Model"
    assert "--tensor-parallel-size" in words and words[words.index("--tensor-parallel-size") + 1] == "$TP_SIZE"
    assert {e["name"]: e.get("value") for e in container["env"]}["TP_SIZE"] == "2"
    assert "$((LWS_GROUP_SIZE * DP_SIZE_LOCAL))" in container["args"][0]  # the data-parallel sum is not touched
    assert stated_sizes(container) == {"tp": 2, "dp_local": 8}
    assert done.sizes == {"LeaderWorkerSet/decode (spec.leaderWorkerTemplate.workerTemplate) container vllm": 16}
    assert obj["spec"]["replicas"] == 2 and obj["spec"]["leaderWorkerTemplate"]["size"] == 2


def test_the_model_flag_of_another_engine_and_its_served_name_are_rewritten():
    container = {"name": "m", "command": ["python3", "-m", "sglang.launch_server"],
                 "args": ["--model-path=Qwen/Qwen3-32B", "--served-model-name", "Qwen/Qwen3-32B", "--tp", "2"]}
    obj = deployment(container)
    applied(obj, EngineChoice("org/New", 1))
    assert container_of(obj)["args"] == ["--model-path=org/New", "--served-model-name", "org/New", "--tp", "1"]
    assert model_of_container(container_of(obj)) == "org/New"


@pytest.mark.parametrize("container, choice, words", [
    # shell arithmetic: which term to change is a guess
    ({"name": "c", "command": ["sh", "-c"], "args": ["vllm serve m --tensor-parallel-size $((A * B))"],
      "env": [{"name": "A", "value": "2"}, {"name": "B", "value": "2"}]},
     EngineChoice(tensor_parallel=8), ["$((A * B))", "shell arithmetic"]),
    # a size a Secret sets
    ({"name": "c", "command": ["sh", "-c"], "args": ["vllm serve m --tensor-parallel-size $TP"],
      "env": [{"name": "TP", "valueFrom": {"configMapKeyRef": {"name": "x", "key": "tp"}}}]},
     EngineChoice(tensor_parallel=2), ["$TP", "valueFrom", "set TP in the overlay"]),
    # a script without the flag: Lens does not know where the command ends
    ({"name": "c", "command": ["sh", "-c"], "args": ["vllm serve m --port 8000\necho done"]},
     EngineChoice(pipeline_parallel=2), ["--pipeline-parallel-size", "a shell script"]),
    # an engine command that names no model
    ({"name": "c", "command": ["vllm", "serve"], "args": ["--port=8000"]},
     EngineChoice(model="org/m"), ["names no model"]),
])
def test_what_the_overlay_fixes_is_refused_with_a_code_naming_it(container, choice, words):
    obj = deployment(container)
    before = copy.deepcopy(obj)
    with pytest.raises(EngineArgumentFixed) as caught:
        applied(obj, choice)
    assert caught.value.code == "DEPLOY_ENGINE_ARGUMENT_FIXED"
    message = caught.value.message
    assert message.startswith("Deployment/decode container c: ")
    assert all(word in message for word in words), message
    assert container_of(before)["args"] == container_of(obj)["args"]  # nothing half-changed before the refusal


def test_a_tensor_parallel_of_one_needs_no_flag_and_an_empty_choice_changes_nothing():
    obj = deployment({"name": "c", "command": ["sh", "-c"], "args": ["vllm serve m"]})
    before = copy.deepcopy(obj)
    assert applied(obj, EngineChoice(tensor_parallel=1)).sizes == {"Deployment/decode container c": 1}
    assert obj == before
    assert applied(obj, EngineChoice()).notes == [] and obj == before


def test_label_values_drop_the_organisation_and_characters_a_label_cannot_hold():
    assert label_value("meta-llama/Llama-3.1-70B") == "Llama-3.1-70B"
    assert label_value("/models/my model+v2/") == "my-model-v2"
    assert len(label_value("org/" + "x" * 100)) == 63


# -- upstream llm-d, rendered with the real kustomize ------------------------------------------

def engine_container(result) -> dict:
    (workload,) = [o for o in result.objects if o.get("kind") == "Deployment" and o["metadata"]["name"].endswith("-decode")]
    return workload["spec"]["template"]["spec"]["containers"][0]


@needs_tree
@needs_kustomize
@pytest.mark.parametrize("hardware, tp", [("nvidia", 4), ("amd", 1), ("intel-xpu", 2)])
def test_optimized_baseline_serves_the_asked_model_at_the_asked_size_without_a_parallelism_warning(hardware, tp):
    result = render(RenderRequest(guide="optimized-baseline", hardware=hardware, model="meta-llama/Llama-3.1-70B",
                                  tensor_parallel=tp, max_model_len=8192, replicas=2), root=ROOT)
    container = engine_container(result)
    assert model_of_container(container) == "meta-llama/Llama-3.1-70B" and result.model == "Llama-3.1-70B"
    flags = stated_flags(container) if tp > 1 else {}
    assert flags == ({"tp": ("--tensor-parallel-size", str(tp))} if tp > 1 else {})
    assert [w for w in result.warnings if w.code == MISMATCH] == []
    assert set(result.fitted.counts.values()) == {tp}  # the pod asks for the devices the engine drives
    (workload,) = [o for o in result.objects if o.get("kind") == "Deployment" and o["metadata"]["name"].endswith("-decode")]
    assert workload["spec"]["replicas"] == 2


@needs_tree
@needs_kustomize
def test_a_wide_ep_size_is_set_through_the_variable_and_a_missing_pipeline_flag_is_refused():
    result = render(RenderRequest(guide="wide-ep-lws", hardware="nvidia", overlay="gke", tensor_parallel=2), root=ROOT)
    lws = [o for o in result.objects if o.get("kind") == "LeaderWorkerSet"]
    assert len(lws) == 2
    for obj in lws:
        for pod in pod_templates(obj):
            container = pod.containers()[0]
            assert {e["name"]: e.get("value") for e in container["env"]}["TP_SIZE"] == "2"
    assert set(result.fitted.counts.values()) == {16}  # TP 2 x 8 local data-parallel ranks
    with pytest.raises(EngineArgumentFixed, match="states no --pipeline-parallel-size"):
        render(RenderRequest(guide="wide-ep-lws", hardware="nvidia", overlay="gke", pipeline_parallel=2), root=ROOT)


@needs_tree
@needs_kustomize
@pytest.mark.parametrize("hardware", ["nvidia", "amd", "intel-xpu"])
def test_the_plans_printed_hand_off_renders_the_planned_model_at_the_planned_size(hardware, capsys):
    assert main(["plan", "--model", "llama-3.1-70b", "--demo", "--no-predict", "-o", "json"]) == 0
    pools = [p for p in json.loads(capsys.readouterr().out)["pools"] if p["profile_id"] == hardware and p["hand_off"]]
    assert pools, f"the demo plans no {hardware} pool"
    hand_off = pools[0]["hand_off"]
    argv = shlex.split(hand_off["deploy"])
    assert argv[:3] == ["lens", "deploy", "render"]
    assert main([*argv[1:], "--llm-d-root", str(ROOT)]) == 0
    captured = capsys.readouterr()
    assert MISMATCH not in captured.err and "warning" not in captured.err
    (workload,) = [d for d in yaml.safe_load_all(captured.out)
                   if d and d.get("kind") == "Deployment" and d["metadata"]["name"].endswith("-decode")]
    container = workload["spec"]["template"]["spec"]["containers"][0]
    assert model_of_container(container) == "meta-llama/Llama-3.1-70B"
    tp = hand_off["tensor_parallel"]
    assert stated_flags(container).get("tp", ("", "1"))[1] == str(tp)
    assert "--max-model-len=8192" in container["args"]
    assert workload["spec"]["replicas"] == hand_off["replicas"]


def test_the_request_checks_its_fields_bounds_naming_the_flag():
    from llm_d_lens.deploy.errors import RenderRequestInvalid

    with pytest.raises(RenderRequestInvalid, match="^--tensor-parallel 0 is not a whole number from 1 to"):
        RenderRequest(guide="g", hardware="h", tensor_parallel=0)
    with pytest.raises(RenderRequestInvalid, match="^--model 'm; rm -rf /' is not a model name"):
        RenderRequest(guide="g", hardware="h", model="m; rm -rf /")
    with pytest.raises(RenderRequestInvalid, match="^--replicas True "):  # a bool is no count
        RenderRequest(guide="g", hardware="h", replicas=True)
    assert RenderRequest(guide="g", hardware="h", model="org/m", replicas=0).engine_choice().replicas == 0


@needs_tree
@needs_kustomize
@pytest.mark.parametrize("hardware, partition, whole", [("nvidia", "nvidia.com/mig-1g.10gb", "nvidia.com/gpu"),
                                                         ("amd", "amd.com/cpx_nps4", "amd.com/gpu")])
def test_a_partition_pools_hand_off_renders_one_partition_a_pod(hardware, partition, whole):
    result = render(RenderRequest(guide="optimized-baseline", hardware=hardware, resource_name=partition,
                                  model="meta-llama/Llama-3.2-1B", tensor_parallel=1), root=ROOT)
    limits = engine_container(result)["resources"]["limits"]
    assert limits[partition] == 1 and whole not in limits
    assert stated_flags(engine_container(result)) == {"tp": ("--tensor-parallel-size", "1")}  # the overlay's 2, rewritten
    assert [w for w in result.warnings if w.severity == "error" or w.code == MISMATCH] == []


def test_a_resource_that_is_neither_the_modes_nor_a_partition_is_refused():
    from llm_d_lens.deploy.errors import DeployRequestInvalid
    from llm_d_lens.deploy.shape import FitOptions, Fitter
    from llm_d_lens.hardware.registry import get_registry
    from llm_d_lens.hardware.resolution import Resolver

    registry = get_registry()
    with pytest.raises(DeployRequestInvalid, match="partition_resource_patterns"):
        Fitter(registry.get("nvidia"), FitOptions(resource_name="nvidia.com/other"), Resolver(registry))
    assert Fitter(registry.get("nvidia"), FitOptions(resource_name="nvidia.com/mig-3g.40gb"), Resolver(registry)).resource_name \
        == "nvidia.com/mig-3g.40gb"
