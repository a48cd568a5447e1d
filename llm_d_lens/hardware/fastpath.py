"""``lens hardware list`` and ``lens hardware resolve`` without Typer, pydantic or Rich, when it is safe.

Why: those imports alone cost several times bare Python's start-up, while the commands only read
a registry and print it. When a validated registry is on disk (``snapshot.py``) and the command
line is one of the plain forms below, :func:`run` answers from it and prints what the full
command prints, byte for byte. Anything else returns ``None`` and the command runs as always:

- options other than ``-o/--output`` (and, for ``resolve``, its six query options), ``--opt=value``
  aside; a value that starts with ``-``; ``--help``; a malformed ``--label``; no query at all;
- a ``--key`` the registry does not know (the full path names the nearest ones).

A table on a pipe is written by ``plain_table.render``; on a terminal, or wherever that is unsure
(colour forced, a non-UTF-8 stdout, a table wider than the width, text Rich would change), Rich
prints it as the full command does, through ``output.emit``.

:func:`remember` stores the snapshot after a full run built the registry. Both are called only for
a real invocation of the ``lens`` script (``cli.main()`` without arguments), never in-process
with a registry a caller set up.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

#: the options of ``lens hardware resolve`` that each take one value, by their dest
RESOLVE_OPTIONS = {"--device-class": "device_classes", "--resource": "resources", "--label": "labels",
                   "--key": "keys", "--aic-system": "aic_systems", "--dra-driver": "dra_drivers"}
LIST_FORMATS = ("table", "wide", "json", "yaml", "name")
FORMATS = ("table", "wide", "json", "yaml")
#: variables that make Rich colour a pipe, so its output is no longer plain
FORCING = ("FORCE_COLOR", "TTY_COMPATIBLE")
COMMANDS = ("list", "resolve")


def _options(args: Sequence[str], names: Sequence[str]) -> dict[str, list[str]] | None:
    """``--name value``/``--name=value`` (and ``-o value``) pairs, or None for anything else."""
    found: dict[str, list[str]] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name == "-o":
            name = "--output"
        if name not in names:
            return None
        if not eq:
            if i + 1 >= len(args):
                return None
            value = args[i + 1]
            i += 1
        if value.startswith("-"):
            return None
        found.setdefault(name, []).append(value)
        i += 1
    return found


def _format(options: dict[str, list[str]], allowed: Sequence[str]) -> str | None:
    given = options.pop("--output", ["table"])
    return given[-1] if given[-1] in allowed else None


def _labels(items: Sequence[str]) -> dict[str, str] | None:
    """The labels, or None for a malformed one: the full command names it."""
    from llm_d_lens.hardware.resolution import split_labels

    labels, malformed = split_labels(items)
    return None if malformed else labels


def run(args: Sequence[str], env: Mapping[str, str]) -> int | None:
    """Answer ``lens ARGS`` from the registry snapshot and return the exit code; None to run the full command."""
    if len(args) < 2 or args[0] != "hardware" or args[1] not in COMMANDS:
        return None
    command = args[1]
    options = _options(args[2:], ("--output", *RESOLVE_OPTIONS) if command == "resolve" else ("--output",))
    if options is None:
        return None
    output = _format(options, LIST_FORMATS if command == "list" else FORMATS)
    if output is None:
        return None
    from llm_d_lens.hardware import snapshot

    registry = snapshot.load(snapshot.key(env), env) or snapshot.bundled(env)
    if registry is None:
        return None
    if command == "list":
        return _print(registry.list_rows, output, "list", registry, env)
    queries = {dest: options.get(name, []) for name, dest in RESOLVE_OPTIONS.items()}
    if _labels(queries["labels"]) is None or not any(queries.values()):
        return None
    from llm_d_lens.hardware.resolution import Resolver, resolve_queries

    try:
        results = resolve_queries(Resolver(registry), parse_labels=_labels, **queries)  # type: ignore[arg-type]
    except snapshot.NotInSnapshot:
        return None
    return _print(results, output, "resolve", registry, env)


def _print(data: list[dict[str, Any]], output: str, command: str, registry: Any, env: Mapping[str, str]) -> int:
    """What the full command prints for ``data``: plain text on a pipe when it can, else through ``output.emit``."""
    from llm_d_lens import output as formats
    from llm_d_lens.hardware import views

    fmt = formats.ListFormat(output) if command == "list" else formats.OutputFormat(output)
    wide = fmt.value == "wide"
    if command == "list":
        columns, cells, title = views.LIST_COLUMNS, views.list_cells, views.list_title(len(registry), registry.version_hash())
    else:
        columns, cells, title = views.RESOLVE_COLUMNS, views.resolve_cells, None
    if fmt.value == "json":  # what output.emit writes (jsonwrite.dumps_indented), without importing msgspec for a few rows
        import json

        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return 0
    if fmt.is_table and (text := _plain(columns, cells(data), wide, title, env)) is not None:
        sys.stdout.write(text)
        return 0

    def table(rows: list[dict[str, Any]], wide: bool = False) -> Any:  # the full command's renderer, failures aside
        extra = {} if title is None else {"title": title}
        return formats.columns_table(columns, cells(rows), wide=wide, **extra)

    formats.emit(data, fmt, table, names=views.list_names if command == "list" else None)
    return 0


def _plain(columns: Any, cells: list[list[str]], wide: bool, title: str | None, env: Mapping[str, str]) -> str | None:
    """The table as Rich prints it on a pipe, without Rich; None on a terminal or where Rich might differ."""
    from llm_d_lens import output, plain_table

    encoding = (getattr(sys.stdout, "encoding", None) or "utf-8").lower()
    if sys.stdout.isatty() or not encoding.startswith("utf") or any(env.get(name) is not None for name in FORCING):
        return None
    columns_env = output._columns()
    width = columns_env if columns_env is not None else (400 if wide else 160)  # as output.console() on a pipe
    return plain_table.render(columns, cells, wide=wide, width=width, title=title)


def remember(args: Sequence[str], env: Mapping[str, str]) -> None:
    """After a full ``lens hardware list/show/resolve``: keep the registry it built, if it built one cleanly."""
    if len(args) < 2 or args[0] != "hardware" or args[1] not in (*COMMANDS, "show"):
        return
    registry_module = sys.modules.get("llm_d_lens.hardware.registry")
    built = registry_module.current_registry() if registry_module is not None else None
    if built is None or built.failures:
        return
    from llm_d_lens.hardware import snapshot
    from llm_d_lens.hardware.views import registered_rows

    text = snapshot.key(env)
    if snapshot.load(text, env) is None:  # on a terminal the full path runs each time: write once
        snapshot.store(text, env, snapshot.of_registry(built, registered_rows(built)))
