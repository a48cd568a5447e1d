"""Echoing a value in an error: bounded in size and in the work it takes, whatever the value."""

from __future__ import annotations

import json
import time

from llm_d_lens.errors import MAX_ECHO_VALUES, LensError, echo


def shared_bomb() -> list[object]:
    value: list[object] = ["lol"] * 9
    for _ in range(9):
        value = [value] * 9  # 387 million leaves, as YAML aliases build them: by reference
    return value


def test_a_value_sharing_one_list_a_billion_times_is_echoed_in_bounded_time_and_size() -> None:
    started = time.monotonic()
    shown = echo(shared_bomb())
    assert time.monotonic() - started < 0.5
    text = json.dumps(shown)
    assert len(text) < 20_000 and text.count('"lol"') + text.count('"..."') <= MAX_ECHO_VALUES + 50


def test_a_problem_holding_the_bomb_in_its_details_stays_small() -> None:
    problem = LensError("refused", details={"value": shared_bomb()}).to_problem()
    assert len(json.dumps(problem)) < 20_000


def test_a_huge_string_is_clipped_before_it_is_re_encoded() -> None:
    value = "\udcff" + "é" * 5_000_000  # a lone surrogate, then 5 million characters
    started = time.monotonic()
    shown = echo(value, 20)
    assert time.monotonic() - started < 0.2
    assert shown.startswith("\\udcff") and shown.endswith("[4999981 more characters]")
    json.dumps(shown).encode("utf-8")  # encodable: a lone surrogate would make this raise


def test_an_unknown_object_is_shown_by_a_bounded_repr() -> None:
    class Blob:
        def __repr__(self) -> str:  # what a value of an unknown type could cost to render
            return "B" * 10_000

    assert len(echo(Blob(), 50)) < 100
    assert echo({1: [1.5, float("inf")], "k": None}) == {"1": [1.5, "inf"], "k": None}
