"""schema.json and the typed models are one source of truth."""

from __future__ import annotations

import json
from importlib.resources import files

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from msgspec import ValidationError

from llm_d_lens.testing.plugins import bundled
from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.hardware.schema import generate_schema


def test_schema_is_a_valid_draft_2020_12_schema():
    schema = json.loads(files("llm_d_lens.hardware").joinpath("schema.json").read_text())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def _objects(node, path="$"):
    """Every object schema in the document, to check unknown keys are refused everywhere."""
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node:
            yield path, node
        for key, value in node.items():
            yield from _objects(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _objects(value, f"{path}[{i}]")


def test_every_object_in_the_schema_rejects_unknown_keys():
    schema = generate_schema()
    objects = list(_objects(schema))
    assert len(objects) > 15
    for path, node in objects:
        assert node.get("additionalProperties") is False, path


MUTATIONS = st.sampled_from([
    ("delete", "vendor"), ("delete", "deployment"), ("set", "id", "Not An Id"), ("set", "access_modes", []),
    ("set", "request_model", "magic"), ("set", "schema_version", 7), ("set", "accelerator_keys", "nvidia"),
    ("set", "node_label_selector", {"a": 1}), ("set", "benchmark_profile", None), ("set", "extra", True),
    ("set", "upstream_labels", [{"variant": "gpu"}]), ("set", "planning", {"memory_models": {"x": {"memory_gib": 0}}}),
])


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(profile_id=st.sampled_from(["nvidia", "amd", "intel-xpu", "intel-gaudi", "google-tpu", "cpu"]),
       mutations=st.lists(MUTATIONS, max_size=3))
def test_schema_and_models_accept_and_refuse_the_same_payloads(profile_id, mutations):
    payload = bundled(profile_id)
    for mutation in mutations:
        if mutation[0] == "delete":
            payload.pop(mutation[1], None)
        else:
            payload[mutation[1]] = mutation[2]
    schema_ok = not list(Draft202012Validator(generate_schema()).iter_errors(payload))
    try:
        HardwareProfile.decode(payload)
        model_ok = True
    except ValidationError:
        model_ok = False
    assert schema_ok == model_ok
