"""Evaluation times: what users type, and what is refused with a reason."""

import pytest

from llm_d_lens.prometheus.instants import parse_instant


@pytest.mark.parametrize("text,seconds", [
    ("1767225600", 1767225600.0), ("1767225600.5", 1767225600.5),
    ("2026-01-01T00:00:00Z", 1767225600.0), ("2026-01-01T01:00:00+01:00", 1767225600.0),
])
def test_accepted_forms(text, seconds):
    assert parse_instant(text) == seconds


@pytest.mark.parametrize("text,reason", [
    ("nan", "is not a finite number of seconds"), ("inf", "is not a finite number of seconds"),
    ("yesterday", "is neither Unix seconds nor an ISO 8601 time"),
    ("2026-01-01T00:00:00", "has no time zone; add Z or an offset"),
])
def test_refused_forms_say_why(text, reason):
    with pytest.raises(ValueError, match=reason):
        parse_instant(text)
