"""If-None-Match as RFC 9110 reads it: weak comparison, lists, ``*``."""

from __future__ import annotations

import json

import pytest

from llm_d_lens.web.conditional import encode, not_modified


@pytest.mark.parametrize(("header", "expected"), [
    (None, False), ("", False), ('"abc"', True), ('W/"abc"', True), ('"x", W/"abc" ', True), ("*", True),
    ('"abcd"', False), ("abc", False), ('"x","y"', False),
])
def test_if_none_match_names_the_tag(header: str | None, expected: bool) -> None:
    assert not_modified(header, '"abc"') is expected


def test_the_tag_follows_the_content_and_carries_the_version() -> None:
    one, two = encode({"a": [1, "é"]}), encode({"a": [1, "e"]})
    assert one.body == '{"a":[1,"é"]}'.encode() and json.loads(one.body) == {"a": [1, "é"]}
    assert one.etag != two.etag and encode({"a": [1, "é"]}).etag == one.etag
    assert encode({}, "v1").etag.startswith('"v1-')
    with pytest.raises(ValueError):
        encode({"x": float("nan")})  # as JSONResponse: NaN is no JSON
