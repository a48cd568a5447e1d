"""The memory a vLLM engine keeps per device besides the KV cache, term by term, and the KV budget left.

vLLM sizes its KV cache once, at start-up (``determine_available_memory`` in
``vllm/v1/worker/gpu_worker.py``): it loads the weights, runs one profiling forward pass over a
dummy batch of ``max_num_batched_tokens`` tokens spread over ``max_num_seqs`` requests plus a
dummy sampler run over ``max_num_seqs`` rows of logits (``profile_run`` in
``gpu_model_runner.py``), and then gives the KV cache::

    requested memory (device total x gpu_memory_utilization)
      - weights - torch peak of the profiling run - non-torch memory (the device runtime context, collective-communication buffers)

Captured graphs come after that, out of what the utilisation leaves free, unless the
engine is told to estimate them first (``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS``). This
module computes each term from the model's shapes and the hardware profile's measured figures
(``planning.engine_memory``), and returns each with its formula and source, so a plan can show
why its KV budget is what it is.

The activation coefficients are fitted to the published vLLM H100 start-up logs
(llm-d-benchmark ``config_explorer/empirical-vllm-memory-results.md``): the peak of the profiling
run is dominated by the sampler's float32 logits and their working copies (sort, softmax) over
``max_num_seqs x vocab`` values, plus the hidden states of the dummy batch. Fitted over Llama,
Qwen3 and gpt-oss runs it reproduces each measured peak within 0.01 GiB.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from llm_d_lens.cluster.model import GIB
from llm_d_lens.planning.architecture import ModelSpec

#: bytes the profiling run holds per (sampled row x vocabulary entry): float32 logits and the
#: sampler's working copies; fitted to the published H100 logs (see the module docstring)
SAMPLER_BYTES_PER_LOGIT = 38.2
#: bytes the profiling run holds per (batched token x hidden unit): the dummy batch's hidden states
#: and residual stream beside the sampler; fitted to the same logs
HIDDEN_BYTES_PER_VALUE = 2.7
#: bytes of one activation value inside the forward pass (bf16/fp16)
ACTIVATION_BYTES = 2
#: vLLM's API-server defaults (``EngineArgs._set_default_args``): devices of 70 GiB or more get the
#: larger scheduler budget
LARGE_DEVICE_GIB = 70
LARGE_DEFAULTS = (8192, 1024)
SMALL_DEFAULTS = (2048, 256)
#: non-torch memory Lens assumes where a profile measured none: one runtime context per device,
#: plus communication buffers when TP > 1
GENERIC_NON_TORCH_GIB = (0.5, 1.0)
ENGINE_SOURCE = "vLLM v1 gpu_worker.determine_available_memory / gpu_model_runner.profile_run"


class DeviceFacts(msgspec.Struct, frozen=True):
    """What a hardware profile knows about one product's memory as an engine sees it."""

    visible_bytes: int | None = None
    visible_source: str = ""
    non_torch_single_bytes: float | None = None
    non_torch_parallel_bytes: float | None = None
    graph_bytes: float = 0.0
    source: str = ""


def facts_from_profile(profile: Any, product: str) -> DeviceFacts:
    """The profile's ``planning.engine_memory`` figures and the product's visible memory, if it has them."""
    planning = getattr(profile, "planning", None)
    if planning is None:
        return DeviceFacts()
    visible, visible_source = None, ""
    key = _product_key(product)
    for name, model in planning.memory_models.items():
        if _product_key(name) == key and getattr(model, "visible_gib", None):
            visible = int(model.visible_gib * GIB)
            visible_source = f"memory-model:{name}.visible_gib"
            break
    engine = getattr(planning, "engine_memory", None)
    if engine is None:
        return DeviceFacts(visible, visible_source)
    return DeviceFacts(visible, visible_source, engine.non_torch_gib_single * GIB, engine.non_torch_gib_parallel * GIB,
                       engine.graph_gib * GIB, engine.source)


def _product_key(name: str) -> str:
    return "-".join(name.strip().lower().replace("_", " ").replace("-", " ").split())


class EngineSettings(msgspec.Struct, frozen=True):
    """The engine flags that size the profiling run and the KV cache."""

    max_num_batched_tokens: int
    max_num_seqs: int
    source: str


def default_settings(device_memory_bytes: int | None, tokens: int | None = None, seqs: int | None = None) -> EngineSettings:
    """vLLM's defaults for the OpenAI server on a device of this size, unless the request names them."""
    large = device_memory_bytes is not None and device_memory_bytes >= LARGE_DEVICE_GIB * GIB
    default_tokens, default_seqs = LARGE_DEFAULTS if large else SMALL_DEFAULTS
    source = (f"vLLM's API-server defaults for a device {'of' if large else 'under'} {LARGE_DEVICE_GIB} GiB"
              f"{' or more' if large else ''}")
    if tokens is not None or seqs is not None:
        source = "asked" if tokens is not None and seqs is not None else f"asked, the rest {source}"
    return EngineSettings(tokens or default_tokens, seqs or default_seqs, source)


class Term(msgspec.Struct, frozen=True):
    name: str
    bytes: float
    formula: str
    source: str
    counted: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"term": self.name, "gib": round(self.bytes / GIB, 2), "formula": self.formula, "source": self.source,
                "counted": self.counted}


def activation_peak(model: ModelSpec, settings: EngineSettings, tp: int) -> Term:
    """Torch peak of the profiling run: the sampler's logits or the widest MLP, plus the batch's hidden states."""
    tokens, seqs = settings.max_num_batched_tokens, min(settings.max_num_seqs, settings.max_num_batched_tokens)
    sampler = seqs * model.vocab_size * SAMPLER_BYTES_PER_LOGIT
    hidden = tokens * model.hidden_size * HIDDEN_BYTES_PER_VALUE
    if model.moe:
        width = model.experts_per_token * (model.moe_intermediate_size or model.intermediate_size)
    else:
        width = model.intermediate_size
    mlp = tokens * 3 * math.ceil(width / tp) * ACTIVATION_BYTES  # gate/up output (2 x width) and the activation
    peak = max(sampler, mlp) + hidden
    formula = (f"max(sampler {seqs} seqs x {model.vocab_size} vocab x {SAMPLER_BYTES_PER_LOGIT} B, "
               f"MLP {tokens} tokens x 3 x {math.ceil(width / tp)} x {ACTIVATION_BYTES} B) "
               f"+ {tokens} tokens x {model.hidden_size} hidden x {HIDDEN_BYTES_PER_VALUE} B")
    return Term("activation_peak", peak, formula,
                f"{ENGINE_SOURCE}; coefficients fitted to vLLM's published H100 logs; {settings.source}")


def non_torch(facts: DeviceFacts, tp: int, pp: int) -> Term:
    parallel = tp * pp > 1
    measured = facts.non_torch_parallel_bytes if parallel else facts.non_torch_single_bytes
    if measured is not None:
        return Term("non_torch", measured, "runtime context and allocator" + (", collective-communication buffers" if parallel else ""),
                    f"hardware profile planning.engine_memory: {facts.source}")
    generic = GENERIC_NON_TORCH_GIB[1 if parallel else 0] * GIB
    return Term("non_torch", generic, "device runtime context" + (" and communication buffers" if parallel else ""),
                "Lens' generic allowance: this hardware profile measured no planning.engine_memory")


def captured_graphs(facts: DeviceFacts) -> Term:
    return Term("captured_graphs", facts.graph_bytes, "graphs captured after the KV cache is sized",
                "taken from the memory the utilisation leaves free, not from the KV budget "
                "(vLLM subtracts an estimate only with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1)"
                + (f"; figure from {facts.source}" if facts.source else ""), counted=False)
