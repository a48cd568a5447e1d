"""Hostile clusters files, as an attack run wrote them: each is a coded error, fast, in one line.

A 342-byte file of YAML aliases stands for a billion strings (it ran 72 s and ended in a
MemoryError traceback while the error path serialised it); a file that is not UTF-8 and one nested
5,000 deep were tracebacks.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from llm_d_lens.cli.app import main
from llm_d_lens.cluster.clusters import load_file
from llm_d_lens.cluster.errors import ClustersFileInvalid, show_value


def laughs(levels: int = 9) -> str:
    """The classic: nine lists of nine aliases of the list before, under an unknown key."""
    text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    previous = "a"
    for name in "bcdefghij"[: levels - 1]:
        text += f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]\n"
        previous = name
    return text


HOSTILE = {
    "aliases": (laughs().encode(), "refused before reading: stands for more than"),
    "aliases as a cluster": (("x: &x [" + ",".join(["lol"] * 9) + "]\n" + "".join(
        f"x{i}: &x{i} [" + ",".join([f"*{'x' if i == 0 else f'x{i - 1}'}"] * 9) + "]\n" for i in range(8))
        + "clusters: [{name: a, demo: true, labels: *x7}]\n").encode(), "stands for more than"),
    "alias cycle": (b"clusters: &c [*c]\n", "refers to the value that contains it"),
    "latin-1": ("clusters:\n  - name: caf\u00e9\n    demo: true\n".encode("latin-1"), "is not UTF-8 text (byte 23"),
    "5,000 deep flow": (("clusters: " + "[" * 5000 + "]" * 5000 + "\n").encode(), "nests deeper than"),
    "5,000 deep block": ("".join("  " * i + f"k{i}:\n" for i in range(5000)).encode(), "is larger than"),
    "1,000 deep block": ("".join(" " * i + f"k{i}:\n" for i in range(1000)).encode(), "nests deeper than"),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_clusters_file_is_refused_fast_with_a_coded_error(name: str, tmp_path: Path) -> None:
    data, says = HOSTILE[name]
    path = tmp_path / "clusters.yaml"
    path.write_bytes(data)
    started = time.monotonic()
    with pytest.raises(ClustersFileInvalid) as caught:
        load_file(path)
    assert time.monotonic() - started < 2.0
    assert caught.value.code == "CLUSTERS_FILE_INVALID" and says in caught.value.message
    assert caught.value.details["file"] == str(path)
    assert len(str(caught.value.to_problem())) < 4000


def test_the_billion_laughs_file_exits_1_in_one_line_through_the_cli(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "clusters.yaml"
    path.write_text(laughs(), encoding="utf-8")
    assert len(laughs().encode()) < 400
    started = time.monotonic()
    assert main(["cluster", "list", "--clusters", str(path)]) == 1
    assert time.monotonic() - started < 5.0
    err = capsys.readouterr().err
    assert err.startswith(f"error: CLUSTERS_FILE_INVALID: {path}: refused before reading")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_an_offending_value_of_shared_lists_is_shown_without_walking_it_whole() -> None:
    value: object = ["lol"] * 9
    for _ in range(9):
        value = [value] * 9  # 387 million strings by reference, as the YAML aliases build it
    started = time.monotonic()
    shown = show_value(value)
    assert time.monotonic() - started < 0.5
    assert shown.startswith('[[[["') and len(shown) <= 60


def test_a_few_aliases_as_people_use_them_still_load(tmp_path: Path) -> None:
    path = tmp_path / "clusters.yaml"
    path.write_text("clusters:\n  - {name: a, context: a, labels: &prod {env: prod, region: us}}\n"
                    "  - {name: b, context: b, labels: *prod}\n", encoding="utf-8")
    clusters = load_file(path)
    assert [c.labels for c in clusters.clusters] == [{"env": "prod", "region": "us"}] * 2


def test_hostile_names_from_a_clusters_file_are_printed_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "x\x1b]0;owned\x07[bold]"
    folder.mkdir()
    path = folder / "clusters.yaml"
    path.write_text('clusters:\n  - name: demo\n    demo: true\n    display_name: "\\e[2J[link=https://evil.example]Demo[/link]"\n'
                    '    labels: {team: "\\e]8;;https://evil.example\\e\\\\x"}\n', encoding="utf-8")
    assert main(["cluster", "list", "--clusters", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "[link=https://evil.example]Demo[/link]" in out and "\\x1b[2J" in out and "[bold]" in out


def test_an_error_naming_a_hostile_file_prints_it_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c\x1b[2J\x9b.yaml"
    path.write_text("clusters: 3\n", encoding="utf-8")
    assert main(["cluster", "list", "--clusters", str(path)]) == 1
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x9b" not in err and "c\\x1b[2J\\x9b.yaml" in err
    assert err.startswith("error: CLUSTERS_FILE_INVALID:") and len(err.strip().splitlines()) == 1
