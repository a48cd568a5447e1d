"""Model shapes: parameters and KV cache per token checked against published figures, and hostile configs."""

from __future__ import annotations

import json

import pytest

from llm_d_lens.planning.architecture import from_config
from llm_d_lens.planning.catalogue import (
    all_specs,
    catalogue_spec,
    nearest,
    parse_json,
    read_config_file,
    resolve,
)
from llm_d_lens.planning.errors import (
    ModelConfigInvalid,
    ModelConfigNotFound,
    ModelUnknown,
)

LLAMA_8B = {"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
            "vocab_size": 128256, "intermediate_size": 14336, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}


# Published figures, typed in from the model cards and papers, not from the catalogue's code path:
# the parameter count the computation must reproduce from the shapes alone (within 0.1 %).
PUBLISHED_BILLIONS = {
    "llama-3.1-8b": 8.03, "llama-3.1-70b": 70.55, "llama-3.1-405b": 405.85, "mistral-7b": 7.24,
    "mixtral-8x7b": 46.70, "qwen2.5-7b": 7.62, "qwen3-30b-a3b": 30.53, "deepseek-v3": 671.0,
}


@pytest.mark.parametrize("model_id,billions", sorted(PUBLISHED_BILLIONS.items()))
def test_parameters_computed_from_shapes_match_the_published_count(model_id, billions):
    spec = catalogue_spec(model_id)
    assert spec.computed_parameters / 1e9 == pytest.approx(billions, rel=1e-3)


def test_active_parameters_of_moe_models_match_the_published_figures():
    # Mixtral: "12.9B active"; Qwen3-30B-A3B: "3.3B activated"; DeepSeek-V3: "37B activated"
    assert catalogue_spec("mixtral-8x7b").active_parameters / 1e9 == pytest.approx(12.9, abs=0.05)
    assert catalogue_spec("qwen3-30b-a3b").active_parameters / 1e9 == pytest.approx(3.3, abs=0.1)
    assert catalogue_spec("deepseek-v3").active_parameters / 1e9 == pytest.approx(37, abs=1)


def test_kv_cache_per_token_follows_from_the_config():
    # Llama 3.1 8B in bf16: 32 layers x 2 x 8 KV heads x 128 x 2 bytes = 128 KiB a token (the widely quoted figure)
    assert catalogue_spec("llama-3.1-8b").kv_values_per_token() * 2 == 128 * 1024
    # Llama 3.1 70B: 80 layers -> 320 KiB a token
    assert catalogue_spec("llama-3.1-70b").kv_values_per_token() * 2 == 320 * 1024
    # DeepSeek-V3's MLA keeps a 512 + 64 latent per layer: 61 x 576 values
    assert catalogue_spec("deepseek-v3").kv_values_per_token() == 61 * 576


def test_every_catalogue_entry_reads_and_names_its_source():
    specs = all_specs()
    assert len(specs) >= 10
    assert all(s.source.startswith("catalogue:") and s.parameters > 0 for s in specs)


def test_catalogue_names_resolve_case_blind_and_by_alias():
    assert resolve("Meta-Llama/Llama-3.1-8B-Instruct").layers == 32
    assert resolve("llama-3.3-70b").hidden_size == 8192


def test_an_unknown_name_lists_the_nearest_and_how_to_pass_a_file():
    with pytest.raises(ModelUnknown) as caught:
        resolve("llama-3.1-7b")
    assert "llama-3.1-8b" in caught.value.details["nearest"]
    assert "config.json" in caught.value.message
    assert nearest("qwen")[:1] and all(n.startswith("qwen") for n in nearest("qwen"))


def test_a_config_file_and_a_model_directory_are_read(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_8B))
    assert read_config_file(tmp_path).computed_parameters == 8030261248
    assert resolve(str(tmp_path / "config.json")).source == str(tmp_path / "config.json")


def test_a_missing_path_is_not_reported_as_an_unknown_model(tmp_path):
    with pytest.raises(ModelConfigNotFound):
        resolve(str(tmp_path / "nope" / "config.json"))
    with pytest.raises(ModelConfigNotFound, match="has none"):
        resolve(str(tmp_path))


@pytest.mark.parametrize("change,path,reason", [
    ({"num_hidden_layers": -3}, "num_hidden_layers", "at least 1"),
    ({"num_hidden_layers": 10**40}, "num_hidden_layers", "larger than any real model"),
    ({"hidden_size": "4096"}, "hidden_size", "not a whole number"),
    ({"hidden_size": True}, "hidden_size", "not a whole number"),
    ({"vocab_size": 1.5}, "vocab_size", "not a whole number"),
    ({"num_key_value_heads": 5}, "num_key_value_heads", "must divide"),
    ({"vocab_size": None}, "vocab_size", "is missing"),
    ({"tie_word_embeddings": "no"}, "tie_word_embeddings", "not true or false"),
    ({"torch_dtype": "float13"}, "torch_dtype", "not a dtype"),
])
def test_a_broken_config_names_the_field_and_value(change, path, reason):
    config = {**LLAMA_8B, **change}
    with pytest.raises(ModelConfigInvalid) as caught:
        from_config(config, "my/config.json")
    assert caught.value.details["path"] == path and reason in caught.value.message
    assert caught.value.message.startswith("my/config.json: ")


def test_shapes_whose_product_is_absurd_are_refused():
    config = {**LLAMA_8B, "hidden_size": 1 << 20, "num_attention_heads": 1 << 13, "num_key_value_heads": 1 << 13,
              "num_hidden_layers": 4096, "intermediate_size": 1 << 24}
    with pytest.raises(ModelConfigInvalid, match="more than any real model"):
        from_config(config, "x.json")


@pytest.mark.parametrize("text,reason", [
    ('{"hidden_size": NaN}', "not a JSON number"),
    ('{"a": 1, "a": 2}', "appears twice"),
    ("[" * 100000, "nested too deeply|not valid JSON"),
    ('{"n": ' + "9" * 5000 + "}", "not valid JSON"),
])
def test_hostile_json_is_a_coded_error(text, reason):
    with pytest.raises(ModelConfigInvalid, match=reason):
        parse_json(text, "c.json")


def test_a_huge_file_is_refused_before_it_is_parsed(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(b" " * (4 * 1024 * 1024 + 10))
    with pytest.raises(ModelConfigInvalid, match="larger than a config.json"):
        read_config_file(path)


def test_multimodal_and_quantized_configs_plan_their_language_model():
    config = {"architectures": ["Mistral3ForConditionalGeneration"], "text_config": LLAMA_8B,
              "quantization_config": {"quant_method": "awq", "bits": 4}}
    spec = from_config(config, "mm.json")
    assert spec.layers == 32 and spec.dtype == "int4" and "vision" in spec.notes[0]
    with pytest.raises(ModelConfigInvalid) as caught:
        from_config({"text_config": {**LLAMA_8B, "num_hidden_layers": 0}}, "mm.json")
    assert caught.value.details["path"] == "text_config.num_hidden_layers"
