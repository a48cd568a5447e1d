"""The entry-point reader against the standard library's ``importlib.metadata``, the reference it stands for."""

from __future__ import annotations

import importlib.metadata as metadata
import sys
from pathlib import Path

import pytest

from llm_d_lens.hardware.entry_points import EntryPoint, installed, version


def _reference(groups: set[str], path: list[str]) -> dict[str, list[tuple[str, str, str, str]]]:
    found: dict[str, list[tuple[str, str, str, str]]] = {g: [] for g in groups}
    seen: set[str] = set()
    for dist in metadata.distributions(path=path):
        key = dist._normalized_name  # the standard library's own de-duplication key
        if key in seen:
            continue
        seen.add(key)
        for ep in dist.entry_points:
            if ep.group in groups:
                found[ep.group].append((ep.name, ep.value, dist.metadata["Name"], dist.version))
    return found


def _ours(groups: set[str], path: list[str]) -> dict[str, list[tuple[str, str, str, str]]]:
    return {group: [(ep.name, ep.value, ep.dist.name, ep.dist.version) for ep in eps]
            for group, eps in installed(groups, path).items()}


def test_every_group_of_this_environment_reads_as_importlib_metadata_reads_it():
    groups = set(metadata.entry_points().groups)
    assert "console_scripts" in groups and "llm_d_lens.hardware.profiles" in groups
    assert _ours(groups, sys.path) == _reference(groups, sys.path)


def _dist(root: Path, folder: str, name: str, version: str, entry_points: str) -> None:
    info = root / folder
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nName: not-a-header\n")
    (info / "entry_points.txt").write_text(entry_points)


def test_hand_made_distributions_read_as_importlib_metadata_reads_them(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    _dist(first, "Acme_Lens-1.0.dist-info", "Acme_Lens", "1.0",
          "  # a comment\nstray = before:any_section\n[lens.x]\n one =  acme.mod:load \n\n[lens.y]\ntwo=acme:obj.attr [extra]\n"
          "[other]\nthree = x:y\n")
    # the same distribution again, later on the path: the first one wins, as in importlib.metadata
    _dist(second, "acme.lens-2.0.dist-info", "acme.lens", "2.0", "[lens.x]\nshadowed = acme:x\n")
    _dist(second, "legacy-0.1.egg-info", "legacy", "0.1", "[lens.x]\nold = legacy\n")
    (second / "broken-1.0.dist-info").mkdir()  # no metadata at all
    path = [str(first), str(second), str(tmp_path / "missing")]
    groups = {"lens.x", "lens.y"}
    ours = _ours(groups, path)
    assert ours == _reference(groups, path)
    assert ours["lens.x"] == [("one", "acme.mod:load", "Acme_Lens", "1.0"), ("old", "legacy", "legacy", "0.1")]
    assert ours["lens.y"] == [("two", "acme:obj.attr [extra]", "Acme_Lens", "1.0")]


def _reference_version(name: str, path: list[str]) -> str | None:
    found = next(iter(metadata.distributions(name=name, path=path)), None)
    return None if found is None else found.version


def test_every_installed_distributions_version_reads_as_importlib_metadata_reads_it():
    names = {dist.metadata["Name"] for dist in metadata.distributions()}
    assert {"msgspec", "llm-d-lens"} <= names
    for name in sorted(names):
        assert version(name) == _reference_version(name, sys.path), name
    assert version("llm_d.Lens") == metadata.version("llm-d-lens")  # any spelling of the name
    assert version("no-such-distribution-anywhere") is None


def test_a_hand_made_distributions_version_is_the_first_on_the_path(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    _dist(first, "Acme_Lens-1.0.dist-info", "Acme_Lens", "1.0", "")
    _dist(second, "acme.lens-2.0.dist-info", "acme.lens", "2.0", "")
    _dist(second, "legacy-0.1.egg-info", "legacy", "0.1", "")
    path = [str(first), str(second)]
    for name in ("acme-lens", "ACME.lens", "legacy", "absent"):
        assert version(name, path) == _reference_version(name, path), name
    assert version("acme-lens", path) == "1.0" and version("absent", path) is None


def test_load_follows_the_attribute_path_like_importlib_metadata(tmp_path, monkeypatch):
    (tmp_path / "ep_target.py").write_text("class Outer:\n    class Inner:\n        value = 7\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ours = EntryPoint("x", "ep_target:Outer.Inner [extra]", "g").load()
    reference = metadata.EntryPoint(name="x", value="ep_target:Outer.Inner [extra]", group="g").load()
    assert ours is reference and ours.value == 7
    assert EntryPoint("m", "ep_target", "g").load() is sys.modules["ep_target"]
    with pytest.raises(ValueError, match="unreadable value"):
        EntryPoint("bad", "not a value!", "g").load()
