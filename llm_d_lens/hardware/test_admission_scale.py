"""Admission at scale: a plugin returning thousands of profiles costs seconds at most, never a minute.

Before, each admitted profile was compared with every one admitted so far (10,000 profiles from
one plugin: 57 s on every command, 49 s of it in that loop); now a lookup admits each, a plugin is
bounded to :data:`MAX_PROFILES_PER_PLUGIN` and all plugins to :data:`MAX_PROFILES`, and resource
prefixes are matched through an index instead of pairwise.
"""

from __future__ import annotations

import random
from importlib.metadata import EntryPoint
from typing import Any

import pytest

from llm_d_lens.hardware import conflicts, discovery, isolation
from llm_d_lens.hardware.conflicts import PrefixIndex, prefixes_overlap
from llm_d_lens.testing.plugins import minimal_profile
from llm_d_lens.hardware.settings import PluginSettings


def run(monkeypatch: pytest.MonkeyPatch, groups: list[list[dict[str, Any]]]) -> discovery.Discovery:
    """Discovery with one third-party entry point per group, each returning that group (no child process)."""
    eps = [EntryPoint(name=group[0]["id"], value=f"acme_plugin{k}:load", group=discovery.PROFILES_GROUP)
           for k, group in enumerate(groups)]
    monkeypatch.setattr(isolation, "load_entry_points", lambda eps, **_: [isolation.Outcome(payloads=g) for g in groups])
    monkeypatch.setattr(discovery, "_dist_name", lambda ep: "acme-plugin")
    monkeypatch.setattr(discovery, "_dist_label", lambda ep: "acme-plugin 1.0")
    return discovery.discover(PluginSettings(), profile_entry_points=eps, provider_entry_points=[], use_cache=False)


def profiles(start: int, count: int, *, one_domain: bool = False) -> list[dict[str, Any]]:
    out = []
    for i in range(start, start + count):
        payload = minimal_profile(f"acme{i}")
        if one_domain:  # every prefix in one domain: the old bucket by domain was pairwise again
            payload["resource_prefixes"] = [f"example.com/npu{i}x"]
            payload["deployment"]["resource_name"] = f"example.com/npu{i}x"
        out.append(payload)
    return out


def counted(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """Count the calls to ``module.name`` (a work count, not a clock: a busy machine cannot fail it)."""
    calls = [0]
    real = getattr(module, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


def test_five_thousand_profiles_in_one_domain_are_admitted_without_pairwise_comparisons(monkeypatch: pytest.MonkeyPatch) -> None:
    overlap_checks = counted(monkeypatch, conflicts, "prefixes_overlap")
    groups = [profiles(k * 1000, 1000, one_domain=True) for k in range(5)]
    found = run(monkeypatch, groups)
    assert len([p for p in found.profiles if p.distributions]) == 5000 and found.failures == []
    # pairwise would be 5000 * 4999 / 2 = 12.5 million; each profile is held against the built-ins' few prefixes
    assert overlap_checks[0] <= 5000 * 20, f"{overlap_checks[0]} prefix comparisons: admission is pairwise again"


def test_the_same_payload_from_two_plugins_is_still_one_profile_with_both_origins(monkeypatch: pytest.MonkeyPatch) -> None:
    shared = minimal_profile("acme0")
    found = run(monkeypatch, [[shared, *profiles(1, 2)], [dict(shared)]])
    [entry] = [p for p in found.profiles if p.profile.id == "acme0"]
    assert len(entry.origins) == 2 and found.failures == []


def test_a_plugin_returning_more_than_its_bound_is_refused_unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    many = profiles(0, discovery.MAX_PROFILES_PER_PLUGIN + 1)
    validated = counted(monkeypatch, discovery, "validate_payload")
    found = run(monkeypatch, [many, profiles(50_000, 1)])
    assert validated[0] == len(found.profiles), "the refused plugin's profiles are never checked, one by one"
    [failure] = found.failures
    assert failure.kind == "payload" and f"more than the {discovery.MAX_PROFILES_PER_PLUGIN}" in failure.reason
    assert [p.profile.id for p in found.profiles if p.distributions] == ["acme50000"], "the other plugin still loads"


def test_plugins_past_the_total_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(discovery, "MAX_PROFILES", 5)
    found = run(monkeypatch, [profiles(0, 3), profiles(10, 3), profiles(20, 2)])
    assert sorted(p.profile.id for p in found.profiles if p.distributions) == ["acme0", "acme1", "acme2", "acme20", "acme21"]
    [failure] = found.failures
    assert failure.name == "acme10" and "past 5" in failure.reason


def test_the_prefix_index_finds_exactly_the_overlapping_prefixes() -> None:
    rng = random.Random(3)
    held = ["".join(rng.choice("ab/.") for _ in range(rng.randint(1, 6))) for _ in range(300)]
    index = PrefixIndex()
    for i, prefix in enumerate(held):
        index.add(prefix, i)
    for probe in [*held[:60], "a", "ab/", "zzz", "b.b.b.b"]:
        want = sorted((other, i) for i, other in enumerate(held) if prefixes_overlap(probe, other))
        assert sorted(index.overlapping(probe)) == want, probe
