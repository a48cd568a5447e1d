"""Catalog.present through the registry's selector postings answers what testing every selector answers."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from llm_d_lens.cluster.catalog import Catalog
from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.hardware.resolution import selector_matches

REGISTRY = get_registry()
CATALOG = Catalog(REGISTRY)
SELECTORS = [(p.id, dict(p.node_label_selector)) for p in REGISTRY.profiles() if p.node_label_selector]
KEYS = sorted({key for _, selector in SELECTORS for key in selector}) + ["kubernetes.io/hostname", "example.com/other"]
VALUES = sorted({value for _, selector in SELECTORS for value in selector.values() if value != "*"}) + ["true", "false", "x"]


def every_selector(labels: dict[str, str]) -> list[tuple[str, dict[str, str]]]:
    """The rule as stated: each profile's whole selector against the labels, in registry order."""
    return [(pid, selector) for pid, selector in SELECTORS if selector_matches(selector, labels)]


def test_the_built_in_selectors_are_found_by_their_own_labels() -> None:
    assert len(SELECTORS) >= 4
    for pid, selector in SELECTORS:
        labels = {key: ("anything" if value == "*" else value) for key, value in selector.items()}
        assert (pid, selector) in CATALOG.present(labels)
        assert CATALOG.present(labels) == every_selector(labels)
        if len(selector) > 1:  # one label short of the selector matches nothing of it
            short = dict(list(labels.items())[1:])
            assert (pid, selector) not in CATALOG.present(short)
    assert CATALOG.present({}) == [] and CATALOG.present({"kubernetes.io/hostname": "n"}) == []


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=len(KEYS)))
def test_present_equals_testing_every_selector(labels: dict[str, str]) -> None:
    assert CATALOG.present(labels) == every_selector(labels)


def test_a_node_carrying_every_selector_finds_them_all_in_registry_order() -> None:
    labels: dict[str, str] = {}
    for _, selector in SELECTORS:
        for key, value in selector.items():
            labels.setdefault(key, "v" if value == "*" else value)
    assert CATALOG.present(labels) == every_selector(labels)
    assert len(CATALOG.present(labels)) >= 2
