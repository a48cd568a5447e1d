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


class DocumentFormat(str, Enum):
    """For commands whose result is a document (manifests, a scenario) rather than rows: no table."""

    yaml = "yaml"
    json = "json"


#: The one name of the option that writes a command's result to a file (never ``-o``: that is the format).
OUTPUT_FILE = "--output-file"


def to_jsonable(data: Any) -> Any:
    if hasattr(data, "model_dump"):
        return data.model_dump(mode="json", exclude_none=False)
    if hasattr(data, "to_dict"):
        return data.to_dict()
    if isinstance(data, dict):
        return {k: to_jsonable(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [to_jsonable(v) for v in data]
    return data


def emit(data: Any, output: OutputFormat, table: Callable[[Any], Any]) -> None:
    """Print ``data`` as JSON or YAML, or render the Rich renderable ``table(data)`` returns."""
    if output is OutputFormat.json:
        from llm_d_lens.jsonwrite import dumps_indented

        sys.stdout.write(dumps_indented(data))  # json.dumps(to_jsonable(data), indent=2) + "\n", at C speed
    elif output is OutputFormat.yaml:
        import yaml

        sys.stdout.write(yaml.safe_dump(to_jsonable(data), sort_keys=False, allow_unicode=True))
    else:
        console(wide=output is OutputFormat.wide).print(table(data))


def console(stderr: bool = False, *, wide: bool = False) -> Any:
    """A terminal's own width; piped, 160 columns, or as wide as it takes for ``-o wide`` (never cut)."""
    from rich.console import Console

    piped = 400 if wide else 160
    return Console(stderr=stderr, soft_wrap=False, width=None if sys.stdout.isatty() else piped)
