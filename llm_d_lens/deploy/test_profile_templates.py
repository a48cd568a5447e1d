"""The deployment block's overlay templates are checked when a profile loads, not when a render fails."""

from __future__ import annotations

import copy

import pytest

from llm_d_lens.deploy.conftest import ACME
from llm_d_lens.hardware.errors import ProfileInvalid
from llm_d_lens.hardware.loader import validate_payload


def with_roots(overlay_root: str, extra: list[str]) -> dict:
    payload = copy.deepcopy(ACME)
    payload["deployment"]["overlay_root"] = overlay_root
    payload["deployment"]["extra_overlay_roots"] = extra
    return payload


def test_a_generation_level_and_extra_roots_are_accepted() -> None:
    profile = validate_payload(with_roots("guides/{guide}/modelserver/{variant}/*/{model_server}",
                                          ["guides/{guide}/modelserver/{variant}/{model_server}"]), "test")
    assert profile.deployment.extra_overlay_roots == ["guides/{guide}/modelserver/{variant}/{model_server}"]
    older = validate_payload(with_roots("guides/{guide}/modelserver/{variant}-*/{model_server}", []), "test")
    assert older.deployment.overlay_root == "guides/{guide}/modelserver/{variant}-*/{model_server}"


@pytest.mark.parametrize("extra,message", [
    ("guides/{guide}/../{variant}", "must be a relative path inside the llm-d source"),
    ("/srv/llm-d/{variant}", "must be a relative path inside the llm-d source"),
    ("guides/{guide}/modelserver/{variant}/v*/{model_server}", "* must be a whole path segment, or follow {variant} as in {variant}-*"),
    ("guides/{guide}/modelserver/{arch}", "unknown placeholder {arch}"),
])
def test_templates_that_leave_the_source_or_do_not_parse_are_refused(extra: str, message: str) -> None:
    with pytest.raises(ProfileInvalid) as raised:
        validate_payload(with_roots("guides/{guide}/modelserver/{variant}/{model_server}", [extra]), "test")
    assert [(i.path, i.message.split(";")[0]) for i in raised.value.issues] == [
        ("$.deployment.extra_overlay_roots[0]", message.split(";")[0])]
