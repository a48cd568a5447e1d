"""Untrusted text on a terminal: what an attacker's plugin or clusters file put in it stays visible, inert."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table
from rich.text import Text

from llm_d_lens.terminal.printable import cell, printable

HOSTILE = ("\x1b[2J\x1b[H"  # clear the screen
           "\x1b]0;owned\x07"  # set the window title
           "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"  # an OSC-8 link
           "\u202eevil\u202c\r\x9b31m [link=https://evil.example]x[/link] [bold red]")


def rendered(renderable: object) -> str:
    out = io.StringIO()
    Console(file=out, force_terminal=True, color_system=None, width=400).print(renderable)
    return out.getvalue()


def test_every_control_character_becomes_a_visible_escape() -> None:
    shown = printable(HOSTILE)
    assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown and "\u202e" not in shown
    assert "\r" not in shown
    assert shown.startswith("\\x1b[2J\\x1b[H\\x1b]0;owned\\x07") and "\\u202eevil\\u202c\\x0d\\x9b31m" in shown


def test_newlines_are_kept_only_when_asked_for() -> None:
    assert printable("a\nb\tc") == "a\\x0ab\\x09c"
    assert printable("a\nb\tc\x1b", lines=True) == "a\nb\tc\\x1b"


def test_length_is_bounded_before_the_work() -> None:
    shown = printable("\x1b" * 1_000_000, limit=10)
    assert shown == "\\x1b" * 10 + "...[999990 more characters]"


def test_a_table_cell_reads_no_markup_and_emits_no_escape() -> None:
    table = Table(title=cell("clusters from /tmp/[bold]x\x1b[2J"))
    table.add_column("NAME")
    table.add_row(cell(HOSTILE))
    out = rendered(table)
    assert "[link=https://evil.example]x[/link]" in out, "the markup was interpreted instead of shown"
    assert "\x1b]8" not in out and "\x1b[2J" not in out and "[bold]x" in out
    assert "\x1b" not in rendered(Text(printable(HOSTILE)))
