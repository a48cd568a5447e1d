"""Output files: written in one step, never replacing what a user has unless asked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from llm_d_lens.errors import LensError
from llm_d_lens.files import OutputInvalid, TextUnreadable, read_text, write_file

EXISTS = LensError("exists", code="OUTPUT_EXISTS")


def test_a_new_file_gets_the_umask_mode_and_no_temporary_is_left(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_file(tmp_path / "out.yaml", b"a: 1\n", replace=False, exists=EXISTS)
    finally:
        os.umask(old)
    assert (tmp_path / "out.yaml").read_bytes() == b"a: 1\n"
    assert (tmp_path / "out.yaml").stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.yaml"]


def test_an_existing_file_or_dangling_symlink_is_kept_unless_replace(tmp_path: Path) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text("mine")
    link = tmp_path / "link.yaml"
    link.symlink_to(tmp_path / "nowhere.yaml")
    for target in (mine, link):
        with pytest.raises(LensError) as caught:
            write_file(target, b"new", replace=False, exists=EXISTS)
        assert caught.value is EXISTS
    assert mine.read_text() == "mine" and link.is_symlink() and not (tmp_path / "nowhere.yaml").exists()
    write_file(mine, b"new", replace=True, exists=EXISTS, mode=0o600)
    assert mine.read_text() == "new" and mine.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(("where", "problem"), [("missing/out.yaml", "the directory {tmp}/missing does not exist"),
                                                (".", "is a directory; give a file name")])
def test_a_path_that_cannot_take_a_file_is_output_invalid(where: str, problem: str, tmp_path: Path) -> None:
    target = tmp_path / where
    with pytest.raises(OutputInvalid) as caught:
        write_file(target, b"x", replace=True, exists=EXISTS)
    assert str(caught.value) == f"{target}: {problem.format(tmp=tmp_path)}"
    assert caught.value.code == "OUTPUT_INVALID"


def test_a_planted_temporary_name_or_symlink_beside_the_target_is_never_followed(tmp_path: Path, capsys) -> None:
    """``lens evaluate config -o F`` (now ``--output-file F``) used to write ``.F.tmp`` and follow a link planted there."""
    from llm_d_lens.cli.app import main

    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    for name in (".scenario.yaml.tmp", ".scenario.yaml.partial"):
        (tmp_path / name).symlink_to(victim)
    out = tmp_path / "scenario.yaml"
    assert main(["evaluate", "config", "--hardware", "nvidia", "--output-file", str(out)]) == 0
    capsys.readouterr()
    assert victim.read_text() == "precious"
    assert "accelerator" in out.read_text() and not out.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".scenario.yaml.partial", ".scenario.yaml.tmp", "scenario.yaml", "victim.txt"]


def test_evaluate_config_refuses_to_replace_a_file_without_force_and_keeps_it(tmp_path: Path, capsys) -> None:
    from llm_d_lens.cli.app import main

    out = tmp_path / "scenario.yaml"
    out.write_text("mine")
    assert main(["evaluate", "config", "--hardware", "nvidia", "--output-file", str(out)]) == 1
    assert "OUTPUT_EXISTS" in capsys.readouterr().err and out.read_text() == "mine"
    assert main(["evaluate", "config", "--hardware", "nvidia", "--output-file", str(out), "--force"]) == 0
    assert out.read_text() != "mine"


def test_a_file_that_appears_during_the_write_is_kept_and_refused(tmp_path: Path, monkeypatch) -> None:
    """The existence check happens again at the moment of publishing, not only before the work."""
    import llm_d_lens.files as files

    target = tmp_path / "out.yaml"
    real_chmod = os.chmod

    def racing_chmod(path, mode):  # runs after the payload is written, before it is published
        real_chmod(path, mode)
        if not target.exists():
            target.write_text("the racer's")

    monkeypatch.setattr(files.os, "chmod", racing_chmod)
    with pytest.raises(LensError) as caught:
        write_file(target, b"mine", replace=False, exists=EXISTS)
    assert caught.value is EXISTS
    assert target.read_text() == "the racer's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.yaml"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path, monkeypatch) -> None:
    import llm_d_lens.files as files

    target = tmp_path / "out.yaml"
    target.write_text("old")

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full_disk)
    with pytest.raises(OutputInvalid, match="No space left on device"):
        write_file(target, b"new", replace=True, exists=EXISTS)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.yaml"]


def test_replacing_a_symlink_replaces_the_link_not_the_file_it_points_to(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = tmp_path / "out.yaml"
    link.symlink_to(victim)
    write_file(link, b"new", replace=True, exists=EXISTS)
    assert victim.read_text() == "precious" and not link.is_symlink() and link.read_bytes() == b"new"


# -- reading: refusals are sentences naming the problem, never a UnicodeDecodeError ---------------


def test_text_is_read_with_its_byte_order_mark_dropped(tmp_path):
    path = tmp_path / "f.yaml"
    path.write_bytes(b"\xef\xbb\xbfa: 1\n")
    assert read_text(path) == "a: 1\n"


@pytest.mark.parametrize(("data", "problem"), [
    (b"ok\xffno", "is not UTF-8 text (byte 2 is b'\\xff'); save it as UTF-8"),
    (b"x" * 11, "is larger than 10 bytes"),
])
def test_a_file_that_is_not_text_or_too_large_is_refused_with_why(tmp_path, data, problem):
    path = tmp_path / "f"
    path.write_bytes(data)
    with pytest.raises(TextUnreadable) as caught:
        read_text(path, limit=10)
    assert caught.value.problem == problem


def test_a_missing_file_or_a_folder_says_it_cannot_be_read(tmp_path):
    with pytest.raises(TextUnreadable, match="cannot be read: No such file"):
        read_text(tmp_path / "absent")
    with pytest.raises(TextUnreadable, match="cannot be read: Is a directory"):
        read_text(tmp_path)
