"""Option value names in plain words (``TEXT``, ``INTEGER``, ``table|json|yaml``), never Python types.

Typer labels a value by its annotation (``<str>``, ``<list[str]>``, ``--help <bool>``), which reads
as code to someone who knows kubectl. Every option without a metavar of its own gets one here,
once, for the whole command tree, so a new command cannot bring the Python names back.
"""

from __future__ import annotations

import enum
from typing import Any

#: Typer's label (without the angle brackets) -> the word help shows
WORDS: dict[str, str] = {
    "str": "TEXT", "int": "INTEGER", "float": "NUMBER", "int range": "INTEGER", "float range": "NUMBER",
    "path": "PATH", "file": "FILE", "directory": "DIR", "datetime": "TIME", "uuid": "UUID",
}


def plain_word(label: str) -> str:
    """``<list[str]>`` -> ``TEXT``; ``<table|json|yaml>`` -> ``table|json|yaml``; unknown -> upper case."""
    label = label.strip("<>")
    while label.startswith("list[") and label.endswith("]"):
        label = label[len("list["):-1]
    if "|" in label:
        return label
    return WORDS.get(label, label.upper())


def _choices(param: Any) -> str | None:
    choices = getattr(getattr(param, "type", None), "choices", None)
    if not choices:
        return None
    return "|".join(str(c.value if isinstance(c, enum.Enum) else c) for c in choices)


def _label(param: Any, ctx: Any) -> str:
    display = getattr(param, "display_type", None)
    if display is not None:
        try:
            return str(display(ctx))
        except Exception:  # a Typer without this API: fall back on click's own type name
            pass
    return str(getattr(param.type, "name", "text"))


def plain_metavars(command: Any, ctx: Any = None) -> Any:
    """Give every option of ``command`` and its subcommands a plain-word metavar; flags get none."""
    if ctx is None:
        # Typer may vendor its own click: build the context from the command's own classes
        ctx = command.context_class(command, **command.context_settings)
    helper = command.get_help_option(ctx)  # made once per command and cached, so it keeps this metavar
    for param in [*getattr(command, "params", []), *([helper] if helper is not None else [])]:
        if getattr(param, "param_type_name", None) != "option" or param.metavar is not None:
            continue
        if param.is_flag:
            param.metavar = ""
        else:
            param.metavar = _choices(param) or plain_word(_label(param, ctx))
    for sub in getattr(command, "commands", {}).values():
        plain_metavars(sub, ctx)
    return command
