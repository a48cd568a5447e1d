"""How a checkpoint stores its weights: which tensor groups are quantized, at what width, with what scales.

A ``quantization_config`` comes in a handful of shapes, one per tool that wrote it (fp8, the
compressed-tensors format llm-compressor writes, AWQ, GPTQ, bitsandbytes, MXFP4, ModelOpt). Each
quantizes the linear layers only: embeddings, the LM head (unless a format says otherwise),
norms and the MoE router stay at the checkpoint's 16-bit dtype, and so do the modules a config
lists as ignored. Scales and zero points are stored beside the packed values; they are counted
here as bits per quantized value so a 4-bit AWQ weight costs 4 + (16 + 4) / 128 bits, not 4.

An unknown method or fields that contradict each other is a :class:`ModelConfigInvalid` naming
the field: a quantized checkpoint silently planned as bf16 is off by 2-4x.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec

from llm_d_lens.planning.errors import ModelConfigInvalid

#: the tensor groups of a decoder-only model, as :meth:`ModelSpec.tensor_groups` counts them
LINEAR_GROUPS = frozenset({"attention", "mlp", "experts"})
ALL_GROUPS = ("embeddings", "lm_head", "attention", "mlp", "experts", "router", "norms")
#: module-name words that say which group an ignored module belongs to
_GROUP_WORDS: tuple[tuple[str, str], ...] = (
    ("lm_head", "lm_head"), ("embed", "embeddings"), ("self_attn", "attention"), ("attn", "attention"),
    *((name, "attention") for name in ("q_proj", "k_proj", "v_proj", "o_proj", "qkv_proj", "q_a_proj", "q_b_proj",
                                       "kv_a_proj", "kv_b_proj")),
    ("experts", "experts"), ("shared_expert", "experts"),
    *((name, "mlp") for name in ("gate_proj", "up_proj", "down_proj", "gate_up_proj")),
    ("mlp.gate", "router"), ("router", "router"), ("mlp", "mlp"), ("feed_forward", "mlp"),
)
_LAYER = re.compile(r"layers\.(\d+)\.")
#: words that mark an ignored module as outside the language model (the vision tower, a projector)
_OUTSIDE = ("vision", "visual", "multi_modal", "mm_projector", "audio", "image")


class WeightFormat(msgspec.Struct, frozen=True):
    """How the linear layers of a checkpoint are stored; everything else keeps ``base_dtype``."""

    method: str
    bits: float
    overhead_bits: float = 0.0
    quantized_groups: frozenset[str] = LINEAR_GROUPS
    #: group -> layer indices an ignore list keeps at 16 bits (None: every layer of the group)
    ignored: Mapping[str, frozenset[int] | None] = msgspec.field(default_factory=dict)
    label: str = "bf16"
    source: str = ""
    notes: tuple[str, ...] = ()

    @property
    def quantized(self) -> bool:
        return self.method != "none"

    @property
    def bits_per_value(self) -> float:
        """Stored bits of one quantized weight, its share of scales and zero points included."""
        return self.bits + self.overhead_bits

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "label": self.label, "bits": self.bits, "overhead_bits": round(self.overhead_bits, 4),
                "quantized_groups": sorted(self.quantized_groups),
                "ignored": {g: (sorted(v) if v is not None else "all") for g, v in self.ignored.items()},
                "source": self.source}


def unquantized(dtype_bits: float, label: str, source: str) -> WeightFormat:
    return WeightFormat("none", dtype_bits, 0.0, frozenset(), {}, label, source)


def uniform(bits: float, label: str, source: str) -> WeightFormat:
    """Linear layers at ``bits`` with no stored scales: what an engine's online quantization (``--dtype``) does."""
    return WeightFormat("online", bits, 0.0, LINEAR_GROUPS, {}, label, source)


class _Q:
    """Typed reads of one quantization_config, errors naming ``<prefix>quantization_config.<key>``."""

    def __init__(self, config: Mapping[str, Any], source: str, prefix: str):
        self.config, self.source, self.prefix = config, source, f"{prefix}quantization_config."

    def fail(self, key: str, value: Any, reason: str) -> ModelConfigInvalid:
        return ModelConfigInvalid(self.source, f"{self.prefix}{key}", value, reason)

    def whole(self, key: str, default: int | None, allowed: tuple[int, ...] | None = None, *, minimum: int = 1) -> int | None:
        value = self.config.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, value, "is not a whole number")
        if allowed is not None and value not in allowed:
            raise self.fail(key, value, f"is not one of {', '.join(map(str, allowed))} for this method")
        if allowed is None and value < minimum:
            raise self.fail(key, value, f"must be at least {minimum}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.config.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, value, "is not true or false")
        return value

    def names(self, key: str) -> list[str]:
        value = self.config.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, value, "is not a list of module names")
        return value


def ignored_groups(names: list[str], layers: int) -> tuple[dict[str, frozenset[int] | None], list[str]]:
    """Which groups (and layers) an ignore list keeps unquantized, and the names it could not place."""
    ignored: dict[str, set[int] | None] = {}
    unplaced: list[str] = []
    for raw in names:
        name = raw[3:] if raw.startswith("re:") else raw
        lowered = name.lower()
        if any(word in lowered for word in _OUTSIDE):
            continue  # the vision tower or projector: not part of the planned language model
        group = next((g for word, g in _GROUP_WORDS if word in lowered), None)
        if group is None:
            unplaced.append(raw)
            continue
        match = _LAYER.search(name)
        if match and not raw.startswith("re:") and int(match.group(1)) < layers:
            current = ignored.setdefault(group, set())
            if current is not None:
                current.add(int(match.group(1)))
        else:
            ignored[group] = None
    frozen = {g: (frozenset(v) if v is not None else None) for g, v in ignored.items()}
    return frozen, unplaced


def read(config: Mapping[str, Any], source: str, prefix: str, *, hidden_size: int, layers: int) -> WeightFormat | None:
    """The checkpoint's :class:`WeightFormat` from its ``quantization_config``, or None when it has none."""
    quant = config.get("quantization_config")
    if quant is None:
        return None
    if not isinstance(quant, Mapping):
        raise ModelConfigInvalid(source, f"{prefix}quantization_config", quant, "is not an object")
    q = _Q(quant, source, prefix)
    method = quant.get("quant_method")
    if method is None and (quant.get("load_in_4bit") or quant.get("load_in_8bit")):
        method = "bitsandbytes"  # configs written before transformers named the method
    if not isinstance(method, str):
        raise q.fail("quant_method", method, "is missing or not a name: Lens cannot tell how the weights are stored")
    reader = _READERS.get(method.lower().replace("_", "-"))
    if reader is None:
        raise q.fail("quant_method", method, f"is not a quantization method Lens can size ({', '.join(sorted(_READERS))}): "
                                             "its weights' width cannot be known, so nothing is planned")
    fmt = reader(q, hidden_size, layers)
    ignore_keys = ("ignore", "ignored_layers", "modules_to_not_convert", "llm_int8_skip_modules", "exclude_modules")
    names = [n for key in ignore_keys for n in q.names(key)]
    groups, unplaced = ignored_groups(names, layers)
    notes = list(fmt.notes)
    if unplaced:
        notes.append(f"quantization_config ignores modules Lens cannot place in a tensor group ({', '.join(unplaced[:4])}"
                     f"{', ...' if len(unplaced) > 4 else ''}): counted as quantized")
    return WeightFormat(fmt.method, fmt.bits, fmt.overhead_bits, fmt.quantized_groups, groups, fmt.label,
                        fmt.source, tuple(notes))


def _fp8(q: _Q, hidden: int, layers: int) -> WeightFormat:
    fmt = q.config.get("fmt", "e4m3")
    if fmt not in ("e4m3", "e5m2", "float8_e4m3fn"):
        raise q.fail("fmt", fmt, "is not an fp8 format (e4m3, e5m2)")
    block = q.config.get("weight_block_size")
    if block is None:
        return WeightFormat("fp8", 8, 0.0, label="fp8", source="quantization_config fp8 (per-tensor scales)")
    if (not isinstance(block, list) or len(block) != 2
            or not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)):
        raise q.fail("weight_block_size", block, "is not two positive whole numbers")
    return WeightFormat("fp8", 8, 32 / (block[0] * block[1]), label="fp8",
                        source=f"quantization_config fp8, a float32 scale per {block[0]}x{block[1]} block")


def _bits_field(q: _Q, allowed: tuple[int, ...], default: int | None = None) -> int:
    bits = q.whole("bits", None, allowed)
    w_bit = q.whole("w_bit", None, allowed)
    if bits is not None and w_bit is not None and bits != w_bit:
        raise q.fail("w_bit", w_bit, f"contradicts bits ({bits})")
    value = bits if bits is not None else w_bit if w_bit is not None else default
    if value is None:
        raise q.fail("bits", None, "is missing: the width of the quantized weights cannot be known")
    return value


def _group(q: _Q, hidden: int, *, keys: tuple[str, ...] = ("group_size", "q_group_size"), default: int = 128) -> int:
    """Values sharing one scale; -1 (per output channel) counts as one scale per input row."""
    for key in keys:
        value = q.config.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or (value < 1 and value != -1):
            raise q.fail(key, value, "is not a positive whole number (or -1 for one group per channel)")
        return hidden if value == -1 else value
    return default


def _awq(q: _Q, hidden: int, layers: int) -> WeightFormat:
    bits = _bits_field(q, (4,), 4)
    group = _group(q, hidden)
    zero = q.flag("zero_point", True)
    overhead = (16 + (bits if zero else 0)) / group
    return WeightFormat("awq", bits, overhead, label=f"int{bits}",
                        source=f"quantization_config awq, {bits}-bit, group {group}: fp16 scales"
                               f"{' and packed zeros' if zero else ''} per group")


def _gptq(q: _Q, hidden: int, layers: int) -> WeightFormat:
    bits = _bits_field(q, (2, 3, 4, 8))
    group = _group(q, hidden)
    # fp16 scales and packed zeros per group, and an int32 group index per input row (about one per hidden row)
    overhead = (16 + bits) / group + 32 / hidden
    return WeightFormat("gptq", bits, overhead, label=f"int{bits}",
                        source=f"quantization_config gptq, {bits}-bit, group {group}: fp16 scales, packed zeros, g_idx")


def _bitsandbytes(q: _Q, hidden: int, layers: int) -> WeightFormat:
    four, eight = q.flag("load_in_4bit", False), q.flag("load_in_8bit", False)
    if four and eight:
        raise q.fail("load_in_8bit", True, "contradicts load_in_4bit (true): a checkpoint is stored one way")
    if not four and not eight:
        raise q.fail("load_in_4bit", False, "and load_in_8bit are both false: a bitsandbytes checkpoint sets one")
    if eight:
        return WeightFormat("bitsandbytes", 8, 32 / hidden, label="int8",
                            source="quantization_config bitsandbytes 8-bit: a float32 scale per row")
    kind = q.config.get("bnb_4bit_quant_type", "fp4")
    if kind not in ("nf4", "fp4"):
        raise q.fail("bnb_4bit_quant_type", kind, "is not nf4 or fp4")
    double = q.flag("bnb_4bit_use_double_quant", False)
    overhead = (8 / 64 + 32 / (64 * 256)) if double else 32 / 64
    return WeightFormat("bitsandbytes", 4, overhead, label="int4",
                        source=f"quantization_config bitsandbytes {kind}: an absmax per 64 values"
                               f"{' (itself quantized)' if double else ''}")


def _mxfp4(q: _Q, hidden: int, layers: int) -> WeightFormat:
    return WeightFormat("mxfp4", 4, 8 / 32, quantized_groups=frozenset({"experts"}), label="fp4",
                        source="quantization_config mxfp4: MoE experts at 4 bits with an 8-bit scale per 32 values; "
                               "attention and the rest 16-bit")


def _modelopt(q: _Q, hidden: int, layers: int) -> WeightFormat:
    algo = q.config.get("quant_algo")
    if algo == "FP8":
        return WeightFormat("modelopt", 8, 0.0, label="fp8", source="quantization_config modelopt FP8 (per-tensor scales)")
    if algo == "NVFP4":
        group = _group(q, hidden, default=16)
        return WeightFormat("modelopt", 4, 8 / group, label="fp4",
                            source=f"quantization_config modelopt NVFP4: an fp8 scale per {group} values")
    raise q.fail("quant_algo", algo, "is not FP8 or NVFP4")


def _compressed_tensors(q: _Q, hidden: int, layers: int) -> WeightFormat:
    groups = q.config.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        raise q.fail("config_groups", groups, "is missing or empty: the compressed-tensors scheme names the weights' format there")
    schemes: list[tuple[str, Mapping[str, Any]]] = []
    for name, group in groups.items():
        if not isinstance(group, Mapping):
            raise q.fail(f"config_groups.{name}", group, "is not an object")
        weights = group.get("weights")
        if weights is None:
            continue  # an activation-only scheme leaves the weights alone
        if not isinstance(weights, Mapping):
            raise q.fail(f"config_groups.{name}.weights", weights, "is not an object")
        schemes.append((name, weights))
    if not schemes:
        raise q.fail("config_groups", list(groups), "quantize no weights")
    shapes = {(w.get("num_bits"), w.get("type"), w.get("strategy"), w.get("group_size")) for _, w in schemes}
    if len(shapes) > 1:
        raise q.fail("config_groups", sorted(groups), "store weights in more than one scheme; Lens plans one width for the linear layers")
    name, weights = schemes[0]
    field_prefix = f"config_groups.{name}.weights."
    bits = weights.get("num_bits")
    kind = weights.get("type", "int")
    if bits not in (4, 8) or isinstance(bits, bool):
        raise q.fail(field_prefix + "num_bits", bits, "is not 4 or 8")
    if kind not in ("int", "float"):
        raise q.fail(field_prefix + "type", kind, "is not int or float")
    strategy = weights.get("strategy", "tensor")
    symmetric = weights.get("symmetric", True)
    scale_bits = 16
    if strategy == "tensor":
        overhead = 0.0
    elif strategy == "channel":
        overhead = scale_bits / hidden
    elif strategy in ("group", "tensor_group"):
        size = weights.get("group_size")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise q.fail(field_prefix + "group_size", size, f"is not a positive whole number (strategy {strategy})")
        scale_bits = 8 if strategy == "tensor_group" else 16  # NVFP4 keeps an fp8 scale per group
        overhead = (scale_bits + (0 if symmetric else bits)) / size
    elif strategy == "block":
        block = weights.get("block_structure")
        if not isinstance(block, list) or len(block) != 2 or not all(isinstance(b, int) and b > 0 for b in block):
            raise q.fail(field_prefix + "block_structure", block, "is not two positive whole numbers (strategy block)")
        overhead = 32 / (block[0] * block[1])
    else:
        raise q.fail(field_prefix + "strategy", strategy, "is not tensor, channel, group, tensor_group or block")
    label = ("fp" if kind == "float" else "int") + str(bits)
    return WeightFormat("compressed-tensors", bits, overhead, label=label,
                        source=f"quantization_config compressed-tensors, {kind} {bits}-bit weights, {strategy} scales")


_READERS = {
    "fp8": _fp8, "compressed-tensors": _compressed_tensors, "awq": _awq, "gptq": _gptq,
    "bitsandbytes": _bitsandbytes, "mxfp4": _mxfp4, "modelopt": _modelopt,
}
