"""PromQL building blocks: values are quoted literally, names are checked, matchers are read back."""

from __future__ import annotations

import re

import pytest

from llm_d_lens.prometheus.promql import (
    label_name,
    matcher,
    matches,
    metric_name,
    parse_matcher,
    quote,
    regex_literal,
    replacement_literal,
    selector,
)


@pytest.mark.parametrize(
    "value, literal",
    [
        ("llm-serving", '"llm-serving"'),
        ('a"b', '"a\\"b"'),
        ("a\\b", '"a\\\\b"'),
        ("line\nbreak", '"line\\nbreak"'),
        ('x"} or vector(1) or {a="', '"x\\"} or vector(1) or {a=\\""'),
        ("naïve", '"naïve"'),
    ],
)
def test_values_become_one_string_literal(value, literal):
    assert quote(value) == literal


def test_regex_literals_match_only_the_value():
    for value in ["gpu-node-.*", "a|b", "(x)", "1.2", "a+b?", "[c]", "^$"]:
        pattern = regex_literal(value)
        assert re.fullmatch(pattern, value)
        assert not re.fullmatch(pattern, value + "x")
    assert regex_literal("node.1") == "node\\.1"


def test_replacements_keep_dollar_signs_literal():
    assert replacement_literal("a$1b") == '"a$$1b"'


def test_matchers_and_selectors_check_names():
    assert matcher("namespace", "=", 'x"y') == 'namespace="x\\"y"'
    assert selector("vllm:num_requests_running", [matcher("pod", "=", "p")]) == 'vllm:num_requests_running{pod="p"}'
    with pytest.raises(ValueError):
        matcher("pod}or{a", "=", "x")
    with pytest.raises(ValueError):
        matcher("pod", "==", "x")
    with pytest.raises(ValueError):
        selector("up or vector(1)")


@pytest.mark.parametrize(
    "text, labels, expected",
    [
        ('card=""', {}, True),  # an absent label is the empty string
        ('card=""', {"card": "card0"}, False),
        ('src!~"sum|avg"', {"src": "direct"}, True),
        ('src!~"sum|avg"', {"src": "sum"}, False),
        ('src=~"su"', {"src": "sum"}, False),  # anchored, as in Prometheus
        ('location="gpu"', {"location": "gpu"}, True),
        ('make!="cloud-tpu"', {"make": "cloud-tpu"}, False),
    ],
)
def test_profile_matchers_are_evaluated_like_prometheus(text, labels, expected):
    assert matches(labels, *parse_matcher(text)) is expected


def test_a_malformed_matcher_is_refused():
    with pytest.raises(ValueError):
        parse_matcher('card=""} or vector(1)')


def test_selector_escapes_backslashes_quotes_and_newlines():
    assert selector("m") == "m"
    rendered = [matcher("a", "=", "c\\d\ne"), matcher("b", "=", 'a"b')]
    assert selector("m", rendered) == 'm{a="c\\\\d\\ne", b="a\\"b"}'


@pytest.mark.parametrize("name", ["gpu\n", "gpu_util\n", "a\n"])
def test_a_name_with_a_trailing_newline_is_no_prometheus_name(name):
    with pytest.raises(ValueError, match="is not a Prometheus"):
        label_name(name)
    with pytest.raises(ValueError, match="is not a Prometheus"):
        metric_name(name)
