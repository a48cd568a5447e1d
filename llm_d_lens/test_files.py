"""Output files: written in one step, never replacing what a user has unless asked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from llm_d_lens.errors import LensError
from llm_d_lens.files import OutputInvalid, write_file

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
