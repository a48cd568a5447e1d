"""Checkpoint formats against published facts: parameters and stored bytes of real configs, and refusals.

The config files under ``testdata/checkpoints/`` hold the dimensions of published checkpoints
(written from their config.json files, dimensions only); ``published.json`` beside them holds
each one's published parameter count and checkpoint size with the source. The table in
docs/planning.md is rendered from the same data (``llm_d_lens/generate/checkpoints.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_d_lens.planning.architecture import from_config
from llm_d_lens.planning.catalogue import read_config_file
from llm_d_lens.planning.errors import ModelConfigInvalid

HERE = Path(__file__).parent
CHECKPOINTS = HERE / "testdata" / "checkpoints"
PUBLISHED: dict[str, dict] = json.loads((CHECKPOINTS / "published.json").read_text())["models"]


def spec(name: str):
    return read_config_file(CHECKPOINTS / name)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_parameters_within_half_a_percent_of_the_published_count(name):
    published = PUBLISHED[name]["parameters"]
    assert spec(name).computed_parameters == pytest.approx(published, rel=0.005)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_weight_bytes_within_three_percent_of_the_published_checkpoint(name):
    assert spec(name).weight_bytes() == pytest.approx(PUBLISHED[name]["checkpoint_bytes"], rel=0.03)


def test_the_set_covers_every_kind_the_issue_names():
    specs = {name: spec(name) for name in PUBLISHED}
    assert any(s.moe and not s.mla for s in specs.values())
    assert any(s.mla for s in specs.values())
    assert any(s.kv_heads < s.attention_heads for s in specs.values())
    methods = {s.weight_format.method for s in specs.values() if s.weight_format}
    assert {"awq", "gptq", "compressed-tensors"} <= methods
    assert specs["gemma-2-9b-it"].model_type == "gemma2"


def test_gemma2_ties_its_head_by_the_model_types_default():
    gemma = spec("gemma-2-9b-it")
    config = json.loads((CHECKPOINTS / "gemma-2-9b-it" / "config.json").read_text())
    assert "tie_word_embeddings" not in config  # the published config leaves it out
    assert gemma.tie_word_embeddings and gemma.tensor_groups()["lm_head"] == 0
    # read as untied, it would be 10.16B parameters: 256000 x 3584 more
    assert gemma.computed_parameters / 1e9 == pytest.approx(9.24, abs=0.01)


def test_awq_keeps_embeddings_and_head_16_bit_and_counts_scales_and_zeros():
    awq = spec("qwen2.5-72b-instruct-awq").weight_bytes_by_group()
    # 2 x 152064 x 8192 values at 2 bytes; linear layers at 4 bits + (16-bit scale + 4-bit zero) / 128
    assert awq["embeddings"] == 152064 * 8192 * 2 and awq["lm_head"] == 152064 * 8192 * 2
    linear = 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024) + 80 * 3 * 8192 * 29696
    assert awq["attention"] + awq["mlp"] == pytest.approx(linear * (4 + 20 / 128) / 8)


def test_compressed_tensors_fp8_is_not_planned_as_bf16():
    fp8 = spec("llama-3.3-70b-instruct-fp8-dynamic")
    assert fp8.dtype == "fp8" and fp8.weight_format.method == "compressed-tensors"
    assert fp8.weight_bytes() / 2**30 == pytest.approx(67.7, abs=0.05)  # vLLM loads it in 67.72 GiB


BASE = {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 4, "vocab_size": 1000,
        "intermediate_size": 512, "torch_dtype": "bfloat16"}


@pytest.mark.parametrize("quant,field", [
    ({"quant_method": "hqq", "bits": 4}, "quantization_config.quant_method"),
    ({"bits": 4}, "quantization_config.quant_method"),
    ({"quant_method": "awq", "bits": 4, "w_bit": 8}, "quantization_config.w_bit"),
    ({"quant_method": "awq", "bits": 3}, "quantization_config.bits"),
    ({"quant_method": "gptq", "group_size": 128}, "quantization_config.bits"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "load_in_8bit": True}, "quantization_config.load_in_8bit"),
    ({"quant_method": "fp8", "weight_block_size": [128]}, "quantization_config.weight_block_size"),
    ({"quant_method": "compressed-tensors"}, "quantization_config.config_groups"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float", "strategy": "row"}}}},
     "quantization_config.config_groups.g.weights.strategy"),
    ({"quant_method": "compressed-tensors", "config_groups": {
        "a": {"weights": {"num_bits": 8, "type": "float"}}, "b": {"weights": {"num_bits": 4, "type": "int"}}}},
     "quantization_config.config_groups"),
])
def test_unknown_or_contradicting_quantization_is_a_coded_refusal(quant, field):
    with pytest.raises(ModelConfigInvalid) as caught:
        from_config({**BASE, "quantization_config": quant}, "x.json")
    assert caught.value.details["path"] == field and caught.value.code == "PLANNING_MODEL_CONFIG_INVALID"


def test_a_quantized_checkpoint_with_a_quantized_torch_dtype_is_refused():
    with pytest.raises(ModelConfigInvalid) as caught:
        from_config({**BASE, "torch_dtype": "int4", "quantization_config": {"quant_method": "awq", "bits": 4}}, "x.json")
    assert caught.value.details["path"] == "torch_dtype"


def test_ignored_modules_stay_16_bit_by_layer():
    quant = {"quant_method": "fp8", "ignored_layers": ["model.layers.0.mlp.down_proj", "lm_head"]}
    model = from_config({**BASE, "quantization_config": quant}, "x.json")
    groups = model.weight_bytes_by_group()
    mlp = 4 * 3 * 256 * 512
    # one of four MLP layers at 2 bytes, three at 1 byte (per-tensor scales)
    assert groups["mlp"] == pytest.approx(mlp / 4 * 2 + mlp * 3 / 4)


def test_an_ignored_gate_proj_is_the_mlp_and_an_ignored_gate_the_router():
    moe = {**BASE, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 128, "first_k_dense_replace": 1}
    quant = {"quant_method": "fp8", "ignored_layers": ["model.layers.0.mlp.gate_proj", "re:.*mlp.gate$"]}
    groups = from_config({**moe, "quantization_config": quant}, "x.json").weight_bytes_by_group()
    assert groups["mlp"] == 3 * 256 * 512 * 2  # the one dense layer kept 16-bit
    assert groups["router"] == 3 * 256 * 4 * 2 and groups["experts"] == 3 * 4 * 3 * 256 * 128  # experts stay fp8


def test_a_float32_checkpoint_is_planned_at_the_engines_16_bits():
    from llm_d_lens.planning.fit import FitRequest

    model = from_config({**BASE, "torch_dtype": "float32"}, "x.json")
    request = FitRequest().checked(model)
    assert (model.dtype, request.dtype, request.kv_dtype) == ("fp32", "bf16", "bf16")
    assert model.weight_bytes(request.dtype) == model.computed_parameters * 2


def test_bitsandbytes_nf4_counts_its_absmax_per_64_values():
    model = from_config({**BASE, "quantization_config": {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}}, "x.json")
    assert model.weight_format.method == "bitsandbytes"
    assert model.weight_bytes_by_group()["mlp"] == pytest.approx(4 * 3 * 256 * 512 * (4 + 32 / 64) / 8)


def test_an_unknown_model_type_says_it_used_generic_defaults():
    model = from_config({**BASE, "model_type": "brandnew"}, "x.json")
    assert not model.tie_word_embeddings
    assert any("'brandnew'" in note and "generic defaults" in note for note in model.notes)
    assert not any("generic" in note for note in from_config(BASE, "x.json").notes)  # llama is known


def test_the_checkpoint_index_total_size_is_the_authority(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(BASE))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 12_345_678}, "weight_map": {}}))
    model = read_config_file(tmp_path)
    assert model.checkpoint_bytes == 12_345_678 and model.weight_bytes() == 12_345_678
    assert model.weight_bytes("fp8") != 12_345_678  # another width asked: computed from the groups
