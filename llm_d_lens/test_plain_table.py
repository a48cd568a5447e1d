"""``plain_table.render`` writes what Rich writes for the same ``columns_table``, or declines.

Rich is the reference: every table here is also printed by ``output.columns_table`` through a
Rich console of the same width with no colour (a pipe), and the two texts must be equal
whenever ``render`` answers at all.
"""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from llm_d_lens.output import Column, columns_table
from llm_d_lens.plain_table import render


def _rich(columns: list[Column], rows: list[list[str]], *, wide: bool, width: int, title: str | None) -> str:
    buffer = io.StringIO()
    extra = {} if title is None else {"title": title}
    Console(file=buffer, soft_wrap=False, width=width).print(columns_table(columns, rows, wide=wide, **extra))
    return buffer.getvalue()


#: cell text as Lens's tables hold it: words, the style tags they use, sometimes a second line or nothing
_word = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=12)
_cell = st.one_of(
    st.just(""), _word, st.lists(_word, min_size=1, max_size=3).map(" ".join),
    st.lists(_word, min_size=2, max_size=3).map("\n".join),
    _word.map(lambda w: f"[dim]{w}[/dim]"), _word.map(lambda w: f"[green]{w}[/]"),
    st.sampled_from(["-", "12", "1.5 GiB", "gpu/amd, gpu/nvidia", ":smile:", "a:b", "[bold]x", "é", "日本", " x", "x "]),
)
_header = st.lists(st.text(alphabet="ABCDEFGHIJ", min_size=1, max_size=6), min_size=1, max_size=2).map(" ".join)


@st.composite
def _tables(draw: st.DrawFn) -> tuple[list[Column], list[list[str]], bool, int, str | None]:
    columns = [Column(draw(_header), numeric=draw(st.booleans()), wide_only=draw(st.booleans()))
               for _ in range(draw(st.integers(1, 5)))]
    rows = draw(st.lists(st.lists(_cell, min_size=len(columns), max_size=len(columns)), max_size=5))
    title = draw(st.one_of(st.none(), _word, st.just("6 hardware profiles (registry 7e69ff5ce5d83b1d)")))
    return columns, rows, draw(st.booleans()), draw(st.sampled_from([20, 40, 80, 160, 400])), title


@settings(max_examples=300, deadline=None)
@given(_tables())
def test_render_is_richs_text_or_declines(table):
    columns, rows, wide, width, title = table
    mine = render(columns, rows, wide=wide, width=width, title=title)
    if mine is not None:
        assert mine == _rich(columns, rows, wide=wide, width=width, title=title)


def test_the_tables_lens_prints_are_rendered_not_declined():
    """The property above holds trivially if ``render`` always declines: these ordinary tables it must write."""
    columns = [Column("ID"), Column("NAME"), Column("VRAM (GiB)", numeric=True), Column("FROM", wide_only=True)]
    rows = [["amd", "AMD Instinct GPU", "192", "bundled\nllm-d-lens 0.1.0"], ["cpu", "[dim]none[/dim]", "", "bundled"]]
    for wide in (False, True):
        for title in (None, "2 hardware profiles"):
            mine = render(columns, rows, wide=wide, width=160, title=title)
            assert mine is not None and mine == _rich(columns, rows, wide=wide, width=160, title=title)
    assert render(columns, [], width=160) == _rich(columns, [], wide=False, width=160, title=None)


def test_what_rich_would_change_is_declined():
    columns = [Column("ID"), Column("NAME")]
    assert render(columns, [["a", "b" * 100]], width=80) is None  # Rich would fold it
    assert render(columns, [["a", "b"]], width=80, title="a title longer than the table") is None  # would wrap
    for cell in (":smile:", "[link]x[/link]", "日本", "é", " leading", "trailing ", "tab\there", "back\\slash"):
        assert render(columns, [["a", cell]], width=80) is None, cell
    assert render(columns, [["only one cell"]], width=80) is None
