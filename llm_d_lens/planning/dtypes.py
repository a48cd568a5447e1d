"""Bytes per value of the number formats a model's weights or KV cache can be stored in.

One table, so the CLI, the API and the fit agree on what ``fp8`` or ``int4`` costs. Block-wise
scales of quantized formats (one per 32-128 values) add about 1-3 % and are not counted; the
explanation of every plan says so.
"""

from __future__ import annotations

from llm_d_lens.planning.errors import RequestInvalid

#: canonical name -> bits per value
BITS: dict[str, float] = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4, "fp4": 4}

#: other spellings (Hugging Face ``torch_dtype``, engine flags) -> canonical name
ALIASES: dict[str, str] = {
    "float32": "fp32", "float": "fp32", "bfloat16": "bf16", "float16": "fp16", "half": "fp16",
    "float8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "float8_e4m3fn": "fp8", "e4m3": "fp8",
    "w8a8": "int8", "w4a16": "int4", "awq": "int4", "gptq": "int4", "mxfp4": "fp4", "nvfp4": "fp4",
}


def canonical(name: str, field: str = "dtype") -> str:
    """The canonical dtype name for ``name``, or a coded error listing the known ones."""
    key = name.strip().lower() if isinstance(name, str) else name
    if isinstance(key, str):
        key = ALIASES.get(key, key)
        if key in BITS:
            return key
    raise RequestInvalid(field, name, f"is not a known dtype; use one of {', '.join(BITS)}")


def bytes_per_value(name: str) -> float:
    return BITS[canonical(name)] / 8
