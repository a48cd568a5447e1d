"""Kubernetes quantities are read exactly: suffixes, exponents, millis, and counts that must be whole."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_d_lens.cluster.quantity import (
    QuantityError,
    parse_bytes,
    parse_count,
    parse_quantity,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", Decimal(0)),
        ("8", Decimal(8)),
        ("+8", Decimal(8)),
        ("-3", Decimal(-3)),
        ("500m", Decimal("0.5")),
        ("1.5", Decimal("1.5")),
        (".5", Decimal("0.5")),
        ("5.", Decimal(5)),
        ("1k", Decimal(1000)),
        ("2M", Decimal(2_000_000)),
        ("3G", Decimal(3_000_000_000)),
        ("1T", Decimal(10**12)),
        ("1P", Decimal(10**15)),
        ("1E", Decimal(10**18)),  # exa, not an exponent
        ("1Ki", Decimal(1024)),
        ("128Gi", Decimal(128 * 2**30)),
        ("81559Mi", Decimal(81559 * 2**20)),
        ("196592Mi", Decimal(196592 * 2**20)),
        ("1Ti", Decimal(2**40)),
        ("2Pi", Decimal(2 * 2**50)),
        ("1Ei", Decimal(2**60)),
        ("1.5Gi", Decimal(3 * 2**29)),
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),  # E followed by digits is an exponent
        ("12e-1", Decimal("1.2")),
        ("1e+2", Decimal(100)),
        ("0.1m", Decimal("0.0001")),
    ],
)
def test_quantities_parse_to_their_exact_value(text: str, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", ["", "x", "8 Gi", "Gi", "1.2.3", "8gi", "8KI", "1e", "e3", "1e3.5", "--1", "1Mi2", " 8", "８"])
def test_things_that_are_not_quantities_are_refused(text: str) -> None:
    with pytest.raises(QuantityError) as caught:
        parse_quantity(text)
    assert caught.value.reason == "is not a quantity"
    assert caught.value.value == text


def test_json_numbers_are_read_but_booleans_and_null_are_not() -> None:
    assert parse_quantity(8) == 8
    assert parse_quantity(0.5) == Decimal("0.5")
    for value in (True, None, [], {}, float("nan")):
        with pytest.raises(QuantityError):
            parse_quantity(value)


def test_absurd_exponents_are_refused_instead_of_building_huge_numbers() -> None:
    with pytest.raises(QuantityError, match="exponent out of range"):
        parse_quantity("1e999999999")


@pytest.mark.parametrize(("text", "expected"), [("0", 0), ("8", 8), ("56", 56), ("1k", 1000), ("2e1", 20), ("4000m", 4), (8, 8)])
def test_counts_are_whole_numbers_in_any_decimal_notation(text: object, expected: int) -> None:
    assert parse_count(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("8Gi", "is not a count (a binary suffix such as Gi belongs to sizes, not counts)"),
        ("500m", "is not a count (not a whole number)"),
        ("1.5", "is not a count (not a whole number)"),
        ("-1", "is not a count (negative)"),
        ("x", "is not a quantity"),
    ],
)
def test_counts_refuse_sizes_fractions_and_negatives(text: str, reason: str) -> None:
    with pytest.raises(QuantityError) as caught:
        parse_count(text)
    assert caught.value.reason == reason


def test_sizes_round_up_to_whole_bytes_like_the_api_server() -> None:
    assert parse_bytes("128Gi") == 137_438_953_472
    assert parse_bytes("1500m") == 2
    assert parse_bytes("0") == 0
    with pytest.raises(QuantityError, match="negative"):
        parse_bytes("-1Ki")


_SUFFIX_SCALE = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


@given(st.integers(min_value=0, max_value=10**12), st.sampled_from(sorted(_SUFFIX_SCALE)))
def test_an_integer_with_any_suffix_means_integer_times_scale(number: int, suffix: str) -> None:
    value = number * _SUFFIX_SCALE[suffix]
    if value > 2**63 - 1:  # beyond the int64 Kubernetes stores: refused, never read as a larger number
        with pytest.raises(QuantityError, match="out of range"):
            parse_quantity(f"{number}{suffix}")
    else:
        assert parse_quantity(f"{number}{suffix}") == value


@given(st.integers(min_value=0, max_value=10**9), st.integers(min_value=-6, max_value=6))
def test_an_exponent_scales_by_a_power_of_ten(number: int, power: int) -> None:
    assert parse_quantity(f"{number}e{power}") == Decimal(number).scaleb(power)
