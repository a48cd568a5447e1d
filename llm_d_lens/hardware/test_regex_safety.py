"""The regex check against polynomial backtracking: chains of adjacent unbounded repeats.

``a*a*a*b`` nests nothing, so the exponential rules let it through, yet a search on 253 ``a``s
takes 0.4 s and on 1,000 takes 46 s (measured here, Python 3.11); four links take 11 s on 253.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from llm_d_lens.testing.plugins import bundled
from llm_d_lens.hardware.errors import ProfileInvalid
from llm_d_lens.hardware.loader import validate_payload
from llm_d_lens.hardware.regex_safety import backtracking_problem
from llm_d_lens.hardware.test_hardening_catalogue import edit

CHAINS = ["a*a*a*b", "^a*a*a*a*b", r"\w+\w+\w+!", ".*.*=.*x", "a+x?a+x?a+!", "(a*)(a*)(a*)b", "a*a*a*$",
          "(?:a|b)*a*[ab]+c", "x(?=a*a*a*)", r"(h100|\d+\w*\d*\w+)"]
FINE = ["a*a*b", r"\w+-\w+-\w+!", r"\d+\.\d+\.\d+", "[a-z]+[0-9]+[a-z]+", "H100.*PCIE", ".*H100.*PCIE.*",
        r".*\d+.*", "(?>a*)a*a*b", r"^nvidia\.com/mig-.+$", r"(^|[^A-Z0-9])L4($|[^0-9])"]


@pytest.mark.parametrize("pattern", CHAINS)
def test_a_chain_of_three_overlapping_unbounded_repeats_is_refused(pattern: str) -> None:
    problem = backtracking_problem(pattern)
    assert problem is not None and problem.startswith("chains 3 unbounded repeats"), problem


@pytest.mark.parametrize("pattern", FINE)
def test_repeats_kept_apart_or_two_at_most_are_accepted_and_fast(pattern: str) -> None:
    assert backtracking_problem(pattern) is None
    for near_miss in ("a" * 253, "a-" * 126, "=" * 253, "1" * 253):
        started = time.monotonic()
        re.search(pattern, near_miss)
        assert time.monotonic() - started < 0.5, (pattern, near_miss[:4])


def test_a_profile_with_a_chain_is_refused_with_the_field_and_the_fix() -> None:
    payload = edit("nvidia", ("planning", "aic_system_patterns"), ["^h100", r"\w+\w+\w+x"])
    with pytest.raises(ProfileInvalid) as caught:
        validate_payload(payload, "chain.json")
    message = str(caught.value)
    assert "$.planning.aic_system_patterns[1]" in message and "put a character between them" in message


def test_every_bundled_profile_still_passes() -> None:
    names = sorted(path.stem for path in (Path(__file__).parent / "profiles").glob("*.json"))
    assert len(names) >= 6
    for name in names:
        assert validate_payload(bundled(name), f"{name}.json").id


@pytest.mark.parametrize("pattern", ["(a|a)*b", "(?:ab|ab)+c", "^(gpu|gpu)+$"])
def test_a_repeated_alternation_of_equal_branches_is_refused(pattern: str) -> None:
    """The parser factors (a|a) into a(|): two empty branches, no shared first character, and 2^n on a near-miss."""
    problem = backtracking_problem(pattern)
    assert problem is not None and problem.startswith("repeats an alternation"), problem


@pytest.mark.parametrize("pattern", ["(a|)*b", "(ab|ac)*d", "(foo|bar)+", "^(nvidia|nvidia-gpu)$"])
def test_an_alternation_with_at_most_one_way_to_match_nothing_is_accepted(pattern: str) -> None:
    assert backtracking_problem(pattern) is None
