"""A ``columns_table`` laid out as Rich lays it out on a pipe, without importing Rich.

Why: importing Rich costs about twice bare Python's whole start-up, and ``lens hardware list``
piped to a file or another program (no terminal, so no colour) prints nothing Rich adds but box
lines and padding. :func:`render` writes those same characters for the simple case only, and
answers ``None`` for everything else, so the caller prints through Rich as before:

- every column fits at its natural width (no wrapping or folding, which is where Rich's layout
  has its own rules), and the title fits on one line above the table;
- every cell and the title are printable ASCII (one character, one column) without Rich markup
  other than the plain colour tags Lens's tables use, without ``:`` (Rich's ``:emoji:`` codes),
  backslashes, or leading and trailing spaces that Rich would strip.

The output is held byte-identical to Rich's by ``test_plain_table.py`` and by the fast-path tests
of ``lens hardware`` (``hardware/test_fastpath.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llm_d_lens.output import Column

#: the markup tags Lens's table cells use: styles only, which a pipe never shows
_TAG = re.compile(r"\[/?(?:(?:bold|dim|italic|red|green|yellow|blue|cyan|magenta)(?: (?:bold|dim|italic))?)?\]")
#: printable ASCII without ``[``, ``]``, ``\`` and ``:`` once the tags are gone
_PLAIN = re.compile(r"[ !-9;-Z^-~]*")


def _plain(value: Any) -> list[str] | None:
    """The lines a cell shows, or None when Rich might render it differently from its text."""
    if not isinstance(value, str):
        return None
    text = _TAG.sub("", value)
    lines = text.split("\n")
    for line in lines:
        if not _PLAIN.fullmatch(line) or line != line.strip(" "):
            return None
    return lines


def render(columns: Sequence[Column], rows: Sequence[Sequence[Any]], *, wide: bool = False, width: int,
           title: str | None = None) -> str | None:
    """What Rich prints for ``columns_table(columns, rows, wide=wide, title=title)`` at ``width`` columns
    with no colour; None where it cannot be sure to write the same."""
    shown = [i for i, column in enumerate(columns) if wide or not column.wide_only]
    header_cells = [_plain(columns[i].header) for i in shown]
    right = [columns[i].numeric for i in shown]
    if not shown or any(len(row) != len(columns) for row in rows):
        return None
    body = [[_plain(row[i]) for i in shown] for row in rows]
    if any(c is None or len(c) != 1 for c in header_cells) or any(None in r for r in body):
        return None
    heads = [c[0] for c in header_cells]  # type: ignore[index]
    widths = [len(h) for h in heads]
    for row in body:
        for i, lines in enumerate(row):
            widths[i] = max(widths[i], *(len(line) for line in lines))  # type: ignore[union-attr]
    table_width = sum(widths) + 3 * len(widths) + 1  # one space each side of a cell, a border between and around
    if table_width > width:
        return None
    out: list[str] = []
    if title is not None:
        lines = _plain(title)
        if lines is None or len(lines) != 1 or len(lines[0]) > table_width:
            return None
        left = (table_width - len(lines[0])) // 2
        out.append(" " * left + lines[0] + " " * (table_width - left - len(lines[0])))

    def rule(left: str, line: str, middle: str, right: str) -> str:
        return left + middle.join(line * (w + 2) for w in widths) + right

    def cells(lines_per_cell: list[list[str]], edge: str) -> list[str]:
        height = max(len(lines) for lines in lines_per_cell)
        return [edge + edge.join(f" {(lines[n] if n < len(lines) else ''):{'>' if r else '<'}{w}} "
                                 for lines, w, r in zip(lines_per_cell, widths, right)) + edge for n in range(height)]

    out.append(rule("┏", "━", "┳", "┓"))
    out += cells([[h] for h in heads], "┃")
    out.append(rule("┡", "━", "╇", "┩"))
    for row in body:
        out += cells(row, "│")  # type: ignore[arg-type]
    out.append(rule("└", "─", "┴", "┘"))
    return "\n".join(out) + "\n"
