"""How a table reaches the terminal: what a user's data says is printed as it is written."""

from __future__ import annotations

from llm_d_lens.terminal.output import Column, columns_table, console


def test_a_name_that_reads_like_an_emoji_code_is_printed_as_written(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    console().print(columns_table([Column("NODE"), Column("DEVICES", numeric=True)], [[":fire:-pool-1", "8"]]))
    out = capsys.readouterr().out
    assert ":fire:-pool-1" in out and "\N{FIRE}" not in out
