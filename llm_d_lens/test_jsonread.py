"""The strict reader's depth check: the same coded finding, at the same path, as it always gave.

The check first walks the document one level at a time without building paths, and only a
document that nests too deep is walked again for the path of its first too-deep value. The
reference below is written independently (recursive, children last-first, which is the order
the reader's depth-first walk reports in); hypothesis holds the reader to it on nested inputs.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_d_lens.jsonread import MAX_DEPTH, Finding, JsonRefused, loads, short


def first_too_deep(value: Any, max_depth: int, depth: int = 0, path: str = "$") -> str | None:
    """The path of the first object or list at ``max_depth`` or deeper; keys written ``.key``, indexes ``[i]``."""
    if isinstance(value, dict):
        children = [(f"{path}.{k}", v) for k, v in value.items()]
    elif isinstance(value, list):
        children = [(f"{path}[{i}]", v) for i, v in enumerate(value)]
    else:
        return None
    if depth >= max_depth:
        return path
    for child_path, child in reversed(children):
        found = first_too_deep(child, max_depth, depth + 1, child_path)
        if found is not None:
            return found
    return None


def refusal(document: Any, max_depth: int) -> list[Finding] | None:
    try:
        loads(json.dumps(document), max_depth=max_depth)
    except JsonRefused as exc:
        return exc.findings
    return None


KEYS = st.text(alphabet=st.sampled_from("ab_-.[]\"$ é0"), max_size=4)
LEAVES = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3)
DOCUMENTS = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
                         max_leaves=40)


@settings(max_examples=400, deadline=None)
@given(document=DOCUMENTS, max_depth=st.integers(0, 7))
def test_nested_input_is_refused_at_the_same_path_or_read_whole(document: Any, max_depth: int) -> None:
    expected = first_too_deep(document, max_depth)
    if expected is None:
        assert refusal(document, max_depth) is None
        assert loads(json.dumps(document), max_depth=max_depth) == document
    else:
        assert refusal(document, max_depth) == [Finding(short(expected, 60), f"nests deeper than {max_depth} levels",
                                                        "the value")]


def test_the_last_sibling_is_reported_first_as_before() -> None:
    document = {"a": [[[]]], "b": {"c": [[1]]}, "z": 1}
    assert refusal(document, 2) == [Finding("$.b.c", "nests deeper than 2 levels", "the value")]
    assert refusal([[[[]]], [[]], [[[]]]], 2) == [Finding("$[2][0]", "nests deeper than 2 levels", "the value")]


def test_a_long_path_is_cut_in_the_message() -> None:
    key = "k" * 30
    document: Any = 1
    for _ in range(4):
        document = {key: document}
    with pytest.raises(JsonRefused) as raised:
        loads(json.dumps(document), max_depth=2)
    path = f"$.{key}.{key}"
    assert raised.value.findings == [Finding(f"{path[:16]}...{path[-8:]} ({len(path)} characters)",
                                             "nests deeper than 2 levels", "the value")]
    assert str(raised.value) == f"{path[:16]}...{path[-8:]} ({len(path)} characters): the value nests deeper than 2 levels"


@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1])
def test_the_limit_itself(depth: int) -> None:
    text = '{"data": ' + "[" * depth + "]" * depth + "}"
    expected = first_too_deep(json.loads(text), MAX_DEPTH)
    if expected is None:
        assert loads(text, max_depth=MAX_DEPTH) == json.loads(text)
    else:
        assert refusal(json.loads(text), MAX_DEPTH) == [Finding(short(expected, 60), f"nests deeper than {MAX_DEPTH} levels",
                                                                "the value")]
    assert (expected is None) == (depth < MAX_DEPTH)
