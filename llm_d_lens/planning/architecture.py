"""A model's shape, read from a Hugging Face-style ``config.json``, and what it costs in memory.

Only the facts the memory fit needs: layers, hidden size, attention and KV heads, head size,
vocabulary, MLP and expert sizes, and the Multi-head Latent Attention (MLA) ranks some MoE models
use. The same reader takes the shipped catalogue's entries (which are config.json subsets), so a
catalogue model and a user's file can never be read two ways.

Every number is bounded: a hostile or broken file (negative layers, ``1e400``, ``NaN``, a string
where a count belongs) is a :class:`ModelConfigInvalid` naming the file, the field and the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from llm_d_lens.planning import dtypes, quantization
from llm_d_lens.planning.errors import ModelConfigInvalid
from llm_d_lens.planning.quantization import WeightFormat

#: upper bounds no real model reaches; beyond them a value is a typo or an attack
BOUNDS: dict[str, int] = {
    "num_hidden_layers": 4096, "hidden_size": 1 << 20, "num_attention_heads": 1 << 14,
    "num_key_value_heads": 1 << 14, "head_dim": 1 << 14, "vocab_size": 1 << 25, "intermediate_size": 1 << 24,
    "moe_intermediate_size": 1 << 24, "num_experts": 1 << 16, "num_experts_per_tok": 1 << 16,
    "n_shared_experts": 1 << 10, "shared_expert_intermediate_size": 1 << 24, "first_k_dense_replace": 4096,
    "kv_lora_rank": 1 << 16, "q_lora_rank": 1 << 16, "qk_rope_head_dim": 1 << 14, "qk_nope_head_dim": 1 << 14,
    "v_head_dim": 1 << 14, "max_position_embeddings": 1 << 30,
}
#: the spellings of the routed-expert count across model families
EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts")
#: a parameter count past this is not a model (the largest published ones are ~2e12)
MAX_PARAMETERS = 10**14
#: what transformers' config class of each model type assumes for a key its config.json leaves out
#: (the ``__init__`` defaults of LlamaConfig, Gemma2Config, ...): Gemma ties its LM head to the
#: embeddings unless told otherwise, Llama does not
MODEL_TYPE_DEFAULTS: dict[str, dict[str, Any]] = {
    **{t: {"tie_word_embeddings": False} for t in (
        "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "deepseek_v2", "deepseek_v3",
        "phi3", "gpt_oss", "granite", "granitemoe", "olmo2", "exaone", "internlm2", "glm4", "glm4_moe", "minimax",
        "ernie4_5", "ernie4_5_moe", "hunyuan_v1_dense", "llama4_text", "mllama_text_model")},
    **{t: {"tie_word_embeddings": True, "head_dim": 256} for t in ("gemma", "gemma2")},
    **{t: {"tie_word_embeddings": True} for t in ("gemma3_text", "cohere", "cohere2", "starcoder2", "phi", "qwen3_next_text")},
}
#: what Lens assumes for a model type it does not know: the larger, untied count
GENERIC_DEFAULTS: dict[str, Any] = {"tie_word_embeddings": False}


class ModelSpec(msgspec.Struct, frozen=True):
    """The shape of one model, with where it was read."""

    name: str
    source: str
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    vocab_size: int
    intermediate_size: int
    tie_word_embeddings: bool = False
    experts: int = 0
    experts_per_token: int = 0
    shared_experts: int = 0
    moe_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0
    dense_layers: int = 0
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    dtype: str = "bf16"
    dtype_source: str = "default bf16 (the config names none)"
    #: the dtype of the tensors no quantization touches (embeddings, norms): the config's torch_dtype
    base_dtype: str = "bf16"
    #: how the checkpoint stores its linear layers; None for a plain (unquantized) checkpoint
    weight_format: WeightFormat | None = None
    model_type: str | None = None
    #: the checkpoint's own total size (model.safetensors.index.json), the authority for weight bytes
    checkpoint_bytes: int | None = None
    max_context: int | None = None
    published_parameters: int | None = None
    published_source: str | None = None
    notes: tuple[str, ...] = msgspec.field(default_factory=tuple)
    #: other names the model goes by (catalogue aliases), for tools that know it under one of them
    aliases: tuple[str, ...] = msgspec.field(default_factory=tuple)

    @property
    def mla(self) -> bool:
        """Multi-head Latent Attention: the KV cache holds one compressed latent per layer and token."""
        return self.kv_lora_rank > 0

    @property
    def moe(self) -> bool:
        return self.experts > 0

    # -- parameters ----------------------------------------------------------------------------

    def _attention_parameters(self) -> int:
        h = self.hidden_size
        if self.mla:
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            if self.q_lora_rank:
                q = h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * self.attention_heads * qk
            else:
                q = h * self.attention_heads * qk
            kv = (h * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
                  + self.kv_lora_rank * self.attention_heads * (self.qk_nope_head_dim + self.v_head_dim))
            return q + kv + self.attention_heads * self.v_head_dim * h
        q_width = self.attention_heads * self.head_dim
        return 2 * h * q_width + 2 * h * self.kv_heads * self.head_dim

    def _expert_parameters(self) -> int:
        """One routed expert: a gated MLP (gate, up and down projections)."""
        return 3 * self.hidden_size * (self.moe_intermediate_size or self.intermediate_size)

    def tensor_groups(self) -> dict[str, int]:
        """Parameters by tensor group, the unit a checkpoint stores at one width.

        Biases and per-head norms (a few thousand values a layer) are left out: below 0.01 %.
        """
        h = self.hidden_size
        moe_layers = self.layers - self.dense_layers if self.moe else 0
        shared = 3 * h * (self.shared_expert_intermediate_size
                          or self.shared_experts * (self.moe_intermediate_size or self.intermediate_size))
        return {
            "embeddings": self.vocab_size * h,
            "lm_head": 0 if self.tie_word_embeddings else self.vocab_size * h,
            "attention": self.layers * self._attention_parameters(),
            "mlp": (self.layers - moe_layers) * 3 * h * self.intermediate_size,
            "experts": moe_layers * (self.experts * self._expert_parameters() + shared),
            "router": moe_layers * h * self.experts,
            "norms": self.layers * 2 * h + h,
        }

    def group_layers(self, group: str) -> int:
        """How many decoder layers a layer-wise group spreads over (0 for embeddings and the head)."""
        moe_layers = self.layers - self.dense_layers if self.moe else 0
        return {"attention": self.layers, "mlp": self.layers - moe_layers, "experts": moe_layers,
                "router": moe_layers, "norms": self.layers}.get(group, 0)

    def kv_projection_share(self) -> float:
        """The share of attention parameters in the K and V projections (replicated when TP > KV heads)."""
        if self.mla:
            return 0.0
        q_width = self.attention_heads * self.head_dim
        kv = 2 * self.hidden_size * self.kv_heads * self.head_dim
        return kv / (2 * self.hidden_size * q_width + kv)

    @property
    def computed_parameters(self) -> int:
        """Parameters from the shapes: embeddings, attention, gated MLPs or experts, norms, LM head."""
        return sum(self.tensor_groups().values())

    def format_for(self, dtype: str | None = None) -> WeightFormat:
        """How the weights are stored: the checkpoint's own format, or ``dtype`` for its linear layers.

        A ``dtype`` other than the checkpoint's is what an engine's online quantization does
        (vLLM ``--quantization fp8``): the linear layers change width, embeddings and norms do not.
        """
        if dtype is None or dtype == self.dtype:
            if self.weight_format is not None:
                return self.weight_format
            return quantization.unquantized(dtypes.BITS[self.base_dtype], self.base_dtype, self.dtype_source)
        bits = dtypes.BITS[dtype]
        if bits >= 16:
            return quantization.unquantized(bits, dtype, f"asked: {dtype}")
        return quantization.uniform(bits, dtype, f"asked: {dtype} for the linear layers (online quantization)")

    def weight_bytes_by_group(self, dtype: str | None = None) -> dict[str, float]:
        """Bytes of each tensor group as stored: quantized groups at their width plus scales, the rest 16-bit."""
        fmt = self.format_for(dtype)
        base = (fmt.bits if not fmt.quantized else dtypes.BITS[self.base_dtype]) / 8
        out: dict[str, float] = {}
        for group, count in self.tensor_groups().items():
            if not fmt.quantized or group not in fmt.quantized_groups:
                out[group] = count * base
                continue
            plain = 0.0
            if group in fmt.ignored:
                layers = fmt.ignored[group]
                spread = self.group_layers(group)
                plain = count if layers is None or not spread else count * min(len(layers), spread) / spread
            out[group] = (count - plain) * fmt.bits_per_value / 8 + plain * base
        return out

    def weight_bytes(self, dtype: str | None = None) -> float:
        """All the weights' bytes: the checkpoint's own total when it states one and no other dtype is asked."""
        if self.checkpoint_bytes and (dtype is None or dtype == self.dtype):
            return float(self.checkpoint_bytes)
        return sum(self.weight_bytes_by_group(dtype).values())

    @property
    def parameters(self) -> int:
        """The published count when the catalogue has one (it is exact), else the computed one."""
        return self.published_parameters or self.computed_parameters

    @property
    def parameter_source(self) -> str:
        if self.published_parameters:
            return f"published: {self.published_source}" if self.published_source else "published"
        return "computed from the config's shapes (biases and per-head norms left out)"

    @property
    def active_parameters(self) -> int:
        """Parameters one token passes through: all of them, less the routed experts it skips."""
        if not self.moe:
            return self.parameters
        skipped = (self.experts - self.experts_per_token) * self._expert_parameters() * (self.layers - self.dense_layers)
        return self.parameters - skipped

    # -- KV cache ------------------------------------------------------------------------------

    def kv_values_per_token(self) -> int:
        """Values the KV cache keeps per token over all layers, before any sharding."""
        if self.mla:
            return self.layers * (self.kv_lora_rank + self.qk_rope_head_dim)
        return self.layers * 2 * self.kv_heads * self.head_dim

    def kv_formula(self) -> str:
        if self.mla:
            return (f"{self.layers} layers x (kv_lora_rank {self.kv_lora_rank} + qk_rope_head_dim "
                    f"{self.qk_rope_head_dim}) values (MLA latent, replicated on every tensor-parallel rank)")
        return f"{self.layers} layers x 2 (K and V) x {self.kv_heads} KV heads x head_dim {self.head_dim} values"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "source": self.source, "layers": self.layers, "hidden_size": self.hidden_size,
            "attention_heads": self.attention_heads, "kv_heads": self.kv_heads, "head_dim": self.head_dim,
            "vocab_size": self.vocab_size, "intermediate_size": self.intermediate_size,
            "experts": self.experts, "experts_per_token": self.experts_per_token, "shared_experts": self.shared_experts,
            "attention": "mla" if self.mla else ("gqa" if self.kv_heads < self.attention_heads else "mha"),
            "parameters": self.parameters, "parameter_source": self.parameter_source,
            "computed_parameters": self.computed_parameters, "active_parameters": self.active_parameters,
            "dtype": self.dtype, "dtype_source": self.dtype_source, "max_context": self.max_context,
            "model_type": self.model_type, "base_dtype": self.base_dtype,
            "weight_format": self.format_for().to_dict(), "tensor_groups": self.tensor_groups(),
            "weight_bytes": round(self.weight_bytes()), "checkpoint_bytes": self.checkpoint_bytes,
            "kv_values_per_token": self.kv_values_per_token(), "kv_formula": self.kv_formula(), "notes": list(self.notes),
        }


# -- reading a config ------------------------------------------------------------------------------


class _Reader:
    """Typed, bounded access to one config mapping, errors naming ``source`` and the field path."""

    def __init__(self, config: Mapping[str, Any], source: str, prefix: str = ""):
        self.config, self.source, self.prefix = config, source, prefix

    def fail(self, key: str, value: Any, reason: str) -> ModelConfigInvalid:
        return ModelConfigInvalid(self.source, f"{self.prefix}{key}", value, reason)

    def integer(self, key: str, *, required: bool = False, default: int = 0, minimum: int = 0) -> int:
        if key not in self.config or self.config[key] is None:
            if required:
                raise self.fail(key, None, "is missing: a model's shape cannot be known without it")
            return default
        value = self.config[key]
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
                value = int(value)
            else:
                raise self.fail(key, value, "is not a whole number")
        if value < minimum:
            raise self.fail(key, value, f"must be at least {minimum}")
        bound = BOUNDS.get(key)
        if bound is not None and value > bound:
            raise self.fail(key, value, f"is larger than any real model's ({bound})")
        return value

    def first_integer(self, keys: tuple[str, ...]) -> tuple[str, int]:
        for key in keys:
            if self.config.get(key) is not None:
                return key, self.integer(key, minimum=0)
        return keys[0], 0

    def boolean(self, key: str, default: bool) -> bool:
        value = self.config.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, value, "is not true or false")
        return value


def _text_part(config: Mapping[str, Any], source: str) -> tuple[Mapping[str, Any], str, list[str]]:
    """Multimodal configs nest the language model under ``text_config``: plan for that part."""
    text = config.get("text_config")
    if text is None:
        return config, "", []
    if not isinstance(text, Mapping):
        raise ModelConfigInvalid(source, "text_config", text, "is not an object")
    merged = {**{k: v for k, v in config.items() if k in ("torch_dtype", "dtype", "quantization_config")}, **text}
    return merged, "text_config.", ["multimodal config: the language model (text_config) is planned; "
                                    "the vision or audio tower's weights are not counted"]


def _base_dtype(reader: _Reader) -> tuple[str, str]:
    """The checkpoint's dtype of the tensors no quantization touches (``torch_dtype``, newer ``dtype``)."""
    for key in ("torch_dtype", "dtype"):
        value = reader.config.get(key)
        if value is not None:
            if not isinstance(value, str):
                raise reader.fail(key, value, "is not a dtype name")
            try:
                return dtypes.canonical(value), f"config {key} {value!r}"
            except Exception:  # noqa: BLE001
                raise reader.fail(key, value, f"is not a dtype this planner knows ({', '.join(dtypes.BITS)})") from None
    return "bf16", "default bf16 (the config names no dtype)"


def _weights(reader: _Reader, hidden: int, layers: int) -> tuple[str, str, str, WeightFormat | None]:
    """(weights dtype label, its source, base dtype, quantization format) of the checkpoint."""
    base, base_source = _base_dtype(reader)
    fmt = quantization.read(reader.config, reader.source, reader.prefix, hidden_size=hidden, layers=layers)
    if fmt is None:
        return base, base_source, base, None
    if dtypes.BITS[base] < 16:  # a quantized checkpoint names the dtype of its unquantized tensors
        raise reader.fail("torch_dtype", reader.config.get("torch_dtype", reader.config.get("dtype")),
                          f"contradicts quantization_config ({fmt.method}): the unquantized tensors need a 16- or 32-bit dtype")
    return fmt.label, fmt.source, base, fmt


def _defaults(config: Mapping[str, Any], part: Mapping[str, Any], notes: list[str]) -> tuple[str | None, dict[str, Any]]:
    """The model type and the defaults its transformers config class assumes for missing keys."""
    model_type = part.get("model_type", config.get("model_type"))
    if not isinstance(model_type, str):
        model_type = None
    known = MODEL_TYPE_DEFAULTS.get(model_type or "")
    if known is not None:
        return model_type, known
    missing = [k for k in GENERIC_DEFAULTS if part.get(k) is None]
    if model_type is not None:
        notes.append(f"model type {model_type!r} is not one Lens knows the transformers defaults of: generic defaults used "
                     f"({', '.join(f'{k}={v}' for k, v in GENERIC_DEFAULTS.items())})")
    elif missing:
        notes.append(f"the config names no model_type: generic defaults used for {', '.join(missing)} "
                     f"({', '.join(f'{k}={GENERIC_DEFAULTS[k]}' for k in missing)})")
    return model_type, GENERIC_DEFAULTS


def from_config(config: Any, source: str, name: str | None = None, *, published: int | None = None,
                published_source: str | None = None) -> ModelSpec:
    """Read a config.json mapping into a :class:`ModelSpec`, or say which field is wrong."""
    if not isinstance(config, Mapping):
        raise ModelConfigInvalid(source, "$", config, "is not a JSON object")
    part, prefix, notes = _text_part(config, source)
    model_type, defaults = _defaults(config, part, notes)
    part = {**{k: v for k, v in defaults.items() if part.get(k) is None}, **{k: v for k, v in part.items() if v is not None}}
    r = _Reader(part, source, prefix)
    layers = r.integer("num_hidden_layers", required=True, minimum=1)
    hidden = r.integer("hidden_size", required=True, minimum=1)
    heads = r.integer("num_attention_heads", required=True, minimum=1)
    kv_heads = r.integer("num_key_value_heads", default=heads, minimum=1)
    if kv_heads > heads or heads % kv_heads:
        raise r.fail("num_key_value_heads", kv_heads, f"must divide num_attention_heads ({heads})")
    if part.get("head_dim") is None and hidden % heads:
        raise r.fail("hidden_size", hidden, f"is not a multiple of num_attention_heads ({heads}) and head_dim is not given")
    head_dim = r.integer("head_dim", default=hidden // heads, minimum=1)
    vocab = r.integer("vocab_size", required=True, minimum=1)
    expert_key, experts = r.first_integer(EXPERT_KEYS)
    moe_inter = r.integer("moe_intermediate_size", minimum=1) if part.get("moe_intermediate_size") is not None else 0
    intermediate = r.integer("intermediate_size", required=not (experts and moe_inter), minimum=1)
    per_token = r.integer("num_experts_per_tok", minimum=1, default=1 if experts else 0) if experts else 0
    if experts and per_token > experts:
        raise r.fail("num_experts_per_tok", per_token, f"is more than the {experts} experts ({expert_key})")
    dense_layers = r.integer("first_k_dense_replace") if experts else 0
    if dense_layers > layers:
        raise r.fail("first_k_dense_replace", dense_layers, f"is more than num_hidden_layers ({layers})")
    if dense_layers and not intermediate:
        raise r.fail("intermediate_size", None, "is missing: the dense layers (first_k_dense_replace) need it")
    kv_lora = r.integer("kv_lora_rank", minimum=1) if part.get("kv_lora_rank") is not None else 0
    rope = r.integer("qk_rope_head_dim", required=bool(kv_lora), minimum=1) if kv_lora else 0
    max_context = r.integer("max_position_embeddings", minimum=1) if part.get("max_position_embeddings") is not None else None
    dtype, dtype_source, base_dtype, weight_format = _weights(r, hidden, layers)
    if weight_format is not None:
        notes.extend(weight_format.notes)
    if part.get("sliding_window") and part.get("use_sliding_window", True) is not False:
        notes.append("sliding-window layers are planned as full attention: the KV figures are an upper bound")
    spec = ModelSpec(
        name=name or str(part.get("_name_or_path") or config.get("_name_or_path") or _architecture(config) or source),
        source=source, layers=layers, hidden_size=hidden, attention_heads=heads, kv_heads=kv_heads,
        head_dim=head_dim, vocab_size=vocab, intermediate_size=intermediate,
        tie_word_embeddings=r.boolean("tie_word_embeddings", False), experts=experts, experts_per_token=per_token,
        shared_experts=r.integer("n_shared_experts") if experts else 0, moe_intermediate_size=moe_inter,
        shared_expert_intermediate_size=r.integer("shared_expert_intermediate_size") if experts else 0,
        dense_layers=dense_layers, kv_lora_rank=kv_lora, q_lora_rank=r.integer("q_lora_rank") if kv_lora else 0,
        qk_rope_head_dim=rope, qk_nope_head_dim=r.integer("qk_nope_head_dim", required=bool(kv_lora), minimum=1) if kv_lora else 0,
        v_head_dim=r.integer("v_head_dim", required=bool(kv_lora), minimum=1) if kv_lora else 0,
        dtype=dtype, dtype_source=dtype_source, base_dtype=base_dtype, weight_format=weight_format,
        model_type=model_type, max_context=max_context,
        published_parameters=published, published_source=published_source, notes=tuple(notes),
    )
    if spec.computed_parameters > MAX_PARAMETERS:
        raise ModelConfigInvalid(source, "$", spec.computed_parameters,
                                 f"parameters follow from these shapes: more than any real model ({MAX_PARAMETERS:.0e})")
    return spec


def _architecture(config: Mapping[str, Any]) -> str | None:
    names = config.get("architectures")
    if isinstance(names, list) and names and isinstance(names[0], str):
        return names[0]
    model_type = config.get("model_type")
    return model_type if isinstance(model_type, str) else None
