"""One way to print results: ``--output table|wide|json|yaml``, used by every command.

``wide`` renders the same table as ``table`` unless the command's renderer shows more columns for it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from enum import Enum
from typing import Any


class OutputFormat(str, Enum):
    table = "table"  # fits 80 columns: the most useful columns
    wide = "wide"  # every column, as `kubectl get -o wide`
    json = "json"
    yaml = "yaml"

    @property
    def is_table(self) -> bool:
        """A table for people (table or wide), as opposed to a document for programs."""
        return self in (OutputFormat.table, OutputFormat.wide)


class ListFormat(str, Enum):
    """For commands that list named things: the table formats, and ``name``, one name a line.

    Plain names rather than kubectl's ``kind/name``: each is what the matching ``lens ... show`` or
    ``--cluster``/``--guide`` option takes, so ``lens hardware list -o name | xargs -n1 lens hardware show``
    works as it reads.
    """

    table = "table"
    wide = "wide"
    json = "json"
    yaml = "yaml"
    name = "name"

    @property
    def is_table(self) -> bool:
        return self in (ListFormat.table, ListFormat.wide)


def list_output_option() -> Any:
    """``-o/--output`` for a list command (the table formats plus ``name``)."""
    from llm_d_lens.terminal import commands
    return commands.Option(ListFormat.table, "--output", "-o", help="table, wide, json, yaml or name (one name a line).")


class TextFormat(str, Enum):
    """For commands whose result is one line a shell uses as it is (a path, flags): ``text`` by default."""

    text = "text"
    json = "json"
    yaml = "yaml"


class DocumentFormat(str, Enum):
    """For commands whose result is a document (manifests, a scenario) rather than rows: no table."""

    yaml = "yaml"
    json = "json"


#: The one name of the option that writes a command's result to a file (never ``-o``: that is the format).
OUTPUT_FILE = "--output-file"


def own_data(value: Any) -> Any:
    """An object's own JSON-ready form: a contract model's ``to_data()``, a request model's ``model_dump``,
    a ``to_dict()``; ``NotImplemented`` for an object with none of them."""
    if hasattr(value, "to_data"):
        return value.to_data()
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=False)
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return NotImplemented


def to_jsonable(data: Any) -> Any:
    own = own_data(data)
    if own is not NotImplemented:
        return own
    if isinstance(data, dict):
        return {k: to_jsonable(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [to_jsonable(v) for v in data]
    return data


def emit(data: Any, output: OutputFormat | ListFormat | TextFormat, table: Callable[..., Any],
         names: Callable[[Any], list[str]] | None = None) -> None:
    """Print ``data`` as JSON or YAML, or render the Rich renderable ``table(data)`` returns.

    A renderer that takes a ``wide`` keyword is called with ``wide=True`` for ``-o wide``; ``-o name``
    prints ``names(data)``, one a line; ``-o text`` prints what ``table(data)`` returns as it is.
    """
    if output.value == "json":
        from llm_d_lens.terminal.jsonwrite import dumps_indented

        sys.stdout.write(dumps_indented(data))  # json.dumps(to_jsonable(data), indent=2) + "\n", at C speed
    elif output.value == "name" and names is not None:
        sys.stdout.write("".join(f"{name}\n" for name in names(data)))
    elif output.value == "text":
        text = table(data)
        if text:
            sys.stdout.write(f"{text}\n")
    elif output.value == "yaml":
        import yaml

        sys.stdout.write(yaml.safe_dump(to_jsonable(data), sort_keys=False, allow_unicode=True))
    else:
        wide = output.value == "wide"
        console(wide=wide).print(table(data, wide=wide) if _takes_wide(table) else table(data))


def _takes_wide(renderer: Callable[..., Any]) -> bool:
    """Whether a table renderer shows more for ``-o wide`` (it takes a ``wide`` keyword)."""
    import inspect

    try:
        return "wide" in inspect.signature(renderer).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


def console(stderr: bool = False, *, wide: bool = False) -> Any:
    """A terminal's own width (``$COLUMNS`` when set); piped, 160 columns, or 400 for ``-o wide`` (never cut).

    ``$COLUMNS`` wins even when piped, so ``COLUMNS=80 lens ... | less`` shows what an 80-column terminal
    would, and the tests render every command at a width they choose.
    """
    from rich.console import Console

    width = _columns()
    if width is None and not sys.stdout.isatty():
        width = 400 if wide else 160
    return Console(stderr=stderr, soft_wrap=False, width=width, emoji=False)  # a name like :fire: is printed as written


def _columns() -> int | None:
    import os

    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def terminal_width() -> int | None:
    """The width lines should keep to: ``$COLUMNS``, else the terminal's; ``None`` when piped (no limit)."""
    import shutil

    if (columns := _columns()) is not None:
        return columns
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


class Column:
    """One column of a command's table: its header (units in it), alignment, and whether only ``-o wide`` shows it."""

    __slots__ = ("header", "numeric", "wide_only")

    def __init__(self, header: str, *, numeric: bool = False, wide_only: bool = False) -> None:
        self.header, self.numeric, self.wide_only = header, numeric, wide_only


def columns_table(columns: list[Column], rows: list[list[Any]], *, wide: bool = False, **table: Any) -> Any:
    """A Rich table of the columns ``-o table`` (or, with ``wide``, ``-o wide``) shows, never hiding a value.

    Long values fold onto a second line instead of ending in an ellipsis (``allocat…`` twice reads
    as one column), and each column is at least as wide as its header's longest word, so a header
    wraps between words but is never cut. Numbers are right-aligned.
    """
    from rich.table import Table

    shown = [i for i, column in enumerate(columns) if wide or not column.wide_only]
    result = Table(**table)
    for i in shown:
        column = columns[i]
        result.add_column(column.header, justify="right" if column.numeric else "left", overflow="fold",
                          min_width=max(len(word) for word in column.header.split()))
    for row in rows:
        result.add_row(*(row[i] for i in shown))
    return result
