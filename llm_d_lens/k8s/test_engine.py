"""Engine sizes as written in upstream manifests: literals, env variables and shell arithmetic."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_d_lens.k8s.engine import DATA_FLAGS, POD_SIZE_FLAGS, engine_tokens, literal_env, resolve_size, stated_flags

ENV = {"TP_SIZE": "2", "DP_SIZE_LOCAL": "8", "LWS_GROUP_SIZE": "2", "EMPTY": "", "WORD": "eight"}


@pytest.mark.parametrize("value, size", [
    ("4", 4), ("'4'", 4), ('"4"', 4), ("$TP_SIZE", 2), ("${TP_SIZE}", 2),
    ("$((LWS_GROUP_SIZE * DP_SIZE_LOCAL))", 16), ("$((2*DP_SIZE_LOCAL+1))", 17), ("$(( $TP_SIZE * ${DP_SIZE_LOCAL} ))", 16),
    ("$UNSET", None), ("$EMPTY", None), ("$WORD", None), ("0", None), ("$((TP_SIZE - 1))", None),
    ("$((TP_SIZE * ))", None), ("${LWS_WORKER_INDEX:-0}", None), ("$(nproc)", None), ("", None), ("-2", None),
    ("$((UNSET * 2))", None), ("4x", None),
])
def test_a_size_is_a_number_only_when_everything_it_names_is_known(value: str, size: int | None) -> None:
    assert resolve_size(value, ENV) == size


@given(st.lists(st.lists(st.integers(1, 64), min_size=1, max_size=3), min_size=1, max_size=3))
def test_arithmetic_multiplies_before_it_adds(terms: list[list[int]]) -> None:
    env = {f"V{i}_{j}": str(n) for i, product in enumerate(terms) for j, n in enumerate(product)}
    expression = " + ".join(" * ".join(f"V{i}_{j}" for j in range(len(product))) for i, product in enumerate(terms))
    expected = sum(math.prod(product) for product in terms)
    assert resolve_size(f"$(({expression}))", env) == expected


def test_a_shell_script_keeps_an_arithmetic_expansion_as_one_word() -> None:
    script = {"command": ["/bin/sh", "-c"], "args": [
        "exec vllm serve m \\\n  --tensor-parallel-size $TP_SIZE \\\n"
        "  --data-parallel-size $((LWS_GROUP_SIZE * DP_SIZE_LOCAL)) \\\n  --data-parallel-size-local $DP_SIZE_LOCAL\n"]}
    assert "$((LWS_GROUP_SIZE * DP_SIZE_LOCAL))" in engine_tokens(script)
    assert stated_flags(script, (*POD_SIZE_FLAGS, (DATA_FLAGS, "dp"))) == {
        "tp": ("--tensor-parallel-size", "$TP_SIZE"), "dp_local": ("--data-parallel-size-local", "$DP_SIZE_LOCAL"),
        "dp": ("--data-parallel-size", "$((LWS_GROUP_SIZE * DP_SIZE_LOCAL))")}
    # the whole-size flag is not a per-pod size: it is read only when asked for
    assert "dp" not in stated_flags(script)


def test_only_literal_env_values_are_read() -> None:
    container = {"env": [{"name": "TP_SIZE", "value": "4"}, {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {}}},
                         "junk", {"name": 3, "value": "x"}]}
    assert literal_env(container) == {"TP_SIZE": "4"}
    assert literal_env({"env": "TP_SIZE=4"}) == {}
