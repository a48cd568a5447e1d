"""Commands declared as typed functions, run by click: the ``lens`` command's whole CLI layer.

A command is a function whose parameters say what it takes: the annotation is the value's type
(``str``, ``int``, ``float``, ``bool``, ``Path``, an ``Enum``, ``list[...]``, ``X | None``) and the
default is an :class:`Option` or :class:`Argument` holding the flags and help::

    app = Group(no_args_is_help=True)

    @app.command("list")
    def list_profiles(output: OutputFormat = Option(OutputFormat.table, "--output", "-o", help="...")) -> None:
        ...

Why not Typer: Typer builds a pydantic adapter per option when a command runs, which made every
``lens`` command start at 7-15x a bare interpreter. This layer turns the same declarations into
plain click objects, and only for the group a command line names (``lens --help`` lists the groups
from a table and builds none). Usage errors, ``--help`` and shell completion are click's own.
"""

from __future__ import annotations

import enum
import functools
import inspect
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from click import BadParameter, Context, echo
from click.exceptions import Abort, Exit

from llm_d_lens.terminal import lifetime

__all__ = ["Abort", "Argument", "BadParameter", "Context", "Exit", "Group", "Option", "echo", "to_click"]

#: the word help shows for a value, never a Python type name
WORDS: dict[type, str] = {str: "TEXT", int: "INTEGER", float: "NUMBER", Path: "PATH"}


class Option:
    """An option's declaration: its default (``...``: required), flags, help and bounds."""

    def __init__(self, default: Any = ..., *flags: str, help: str | None = None, metavar: str | None = None,
                 min: float | None = None, max: float | None = None, is_eager: bool = False,
                 callback: Callable[[Any], Any] | None = None, hidden: bool = False) -> None:
        self.default, self.flags, self.help, self.metavar = default, flags, help, metavar
        self.min, self.max, self.is_eager, self.callback, self.hidden = min, max, is_eager, callback, hidden


class Argument:
    """A positional argument's declaration: its default (``...``: required), metavar and help."""

    def __init__(self, default: Any = ..., *, metavar: str | None = None, help: str | None = None) -> None:
        self.default, self.metavar, self.help = default, metavar, help


class _HelpArgument(click.Argument):
    """A click argument that keeps its help line (click's own has none), for ``docs/cli.md``."""

    def __init__(self, *args: Any, help: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = help


class _EnumChoice(click.Choice):
    """An ``Enum`` option: its values are the choices, and the command gets the member."""

    def __init__(self, kind: type[enum.Enum]) -> None:
        super().__init__([str(member.value) for member in kind])
        self.kind = kind

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, self.kind):
            return value
        return self.kind(super().convert(value, param, ctx))


class _Declared:
    """One command or group as declared: the function, its name and how click should show it."""

    def __init__(self, function: Callable[..., Any] | None, name: str | None, help: str | None, hidden: bool,
                 settings: dict[str, Any]) -> None:
        self.function, self.name, self.help, self.hidden, self.settings = function, name, help, hidden, settings


class Group:
    """A command group: commands, subgroups and an optional callback run before any of them."""

    def __init__(self, *, name: str | None = None, help: str | None = None, no_args_is_help: bool = False,
                 invoke_without_command: bool = False, context_settings: dict[str, Any] | None = None) -> None:
        self.name, self.help = name, help
        self.no_args_is_help, self.invoke_without_command = no_args_is_help, invoke_without_command
        self.context_settings = dict(context_settings or {})
        self.commands: list[_Declared] = []
        self.groups: list[tuple[Group, str, str | None, bool]] = []
        self.callback_function: Callable[..., Any] | None = None

    def command(self, name: str | None = None, *, help: str | None = None,
                hidden: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(function: Callable[..., Any]) -> Callable[..., Any]:
            self.commands.append(_Declared(function, name, help, hidden, {}))
            return function
        return register

    def callback(self, *, invoke_without_command: bool | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(function: Callable[..., Any]) -> Callable[..., Any]:
            self.callback_function = function
            if invoke_without_command is not None:
                self.invoke_without_command = invoke_without_command
            return function
        return register

    def add_group(self, group: Group, *, name: str, help: str | None = None, hidden: bool = False) -> None:
        self.groups.append((group, name, help, hidden))


def to_click(group: Group, name: str | None = None, help: str | None = None, hidden: bool = False) -> click.Group:
    """The click group ``group`` declares, with every command and subgroup built now."""
    function = group.callback_function
    doc = help or group.help or (inspect.getdoc(function) if function else None)
    built = click.Group(
        name=name or group.name, help=doc, hidden=hidden, no_args_is_help=group.no_args_is_help,
        invoke_without_command=group.invoke_without_command, context_settings=group.context_settings or None,
        params=_params(function) if function else [],
        callback=_callback(function) if function else None,
    )
    for declared in group.commands:
        command = _command(declared)
        built.add_command(command, command.name)
    for sub, sub_name, sub_help, sub_hidden in group.groups:
        built.add_command(to_click(sub, sub_name, sub_help, sub_hidden), sub_name)
    return built


def _command(declared: _Declared) -> click.Command:
    function = declared.function
    assert function is not None
    name = declared.name or function.__name__.replace("_", "-")
    return click.Command(name=name, help=declared.help or inspect.getdoc(function), hidden=declared.hidden,
                         params=_params(function), callback=_callback(function))


def _callback(function: Callable[..., Any]) -> Callable[..., Any]:
    """Call ``function`` with click's values; a ``Context`` parameter gets the current context."""
    wants_context = [name for name, kind in _hints(function).items() if kind is Context]

    @functools.wraps(function)
    def run(**values: Any) -> Any:
        lifetime.command_starts()
        for name in wants_context:
            values[name] = click.get_current_context()
        return function(**values)
    return run


def _hints(function: Callable[..., Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(function)
    hints.pop("return", None)
    return hints


def _params(function: Callable[..., Any]) -> list[click.Parameter]:
    hints = _hints(function)
    params: list[click.Parameter] = []
    for name, parameter in inspect.signature(function).parameters.items():
        kind = hints.get(name, str)
        if kind is Context:
            continue
        declared = parameter.default
        if isinstance(declared, Argument):
            params.append(_argument(name, kind, declared))
        elif isinstance(declared, Option):
            params.append(_option(name, kind, declared))
        else:
            default = ... if declared is inspect.Parameter.empty else declared
            params.append(_option(name, kind, Option(default)))
    return params


def _unwrap(kind: Any) -> tuple[Any, bool]:
    """``X | None`` -> (X, False); ``list[X]`` -> (X, True); anything else -> (it, False)."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        kind = next(arg for arg in typing.get_args(kind) if arg is not type(None))
    if typing.get_origin(kind) in (list, tuple):
        return typing.get_args(kind)[0], True
    return kind, False


def _click_type(kind: Any, declared: Option | Argument) -> click.ParamType:
    low, high = getattr(declared, "min", None), getattr(declared, "max", None)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return _EnumChoice(kind)
    if kind is int:
        return click.IntRange(low, high) if low is not None or high is not None else click.INT
    if kind is float:
        return click.FloatRange(low, high) if low is not None or high is not None else click.FLOAT
    if kind is Path:
        return click.Path(path_type=Path)
    return click.STRING


def _metavar(kind: Any, click_type: click.ParamType) -> str:
    if isinstance(click_type, click.Choice):
        return "|".join(str(choice) for choice in click_type.choices)
    return WORDS.get(kind, "TEXT")


def _default(value: Any, many: bool) -> Any:
    if value is ...:
        return None
    if many and value is not None:
        return tuple(value)
    return value


def _argument(name: str, kind: Any, declared: Argument) -> click.Argument:
    inner, many = _unwrap(kind)
    required = declared.default is ...
    # no default at all when required: click 8.2+ takes an explicit ``default=None`` as a given value
    # and would hand the command None instead of saying the argument is missing
    defaults = {} if required else {"default": None if many else declared.default}
    return _HelpArgument(
        [name], type=_click_type(inner, declared), required=required, nargs=-1 if many else 1,
        metavar=declared.metavar, help=declared.help, callback=_as_list if many else None, **defaults,
    )


def _option(name: str, kind: Any, declared: Option) -> click.Option:
    inner, many = _unwrap(kind)
    flags = list(declared.flags) or [f"--{name.replace('_', '-')}"]
    extra: dict[str, Any] = {}
    if inner is bool:
        if not declared.flags:
            flags = [f"--{name.replace('_', '-')}/--no-{name.replace('_', '-')}"]
        extra.update(is_flag=True, metavar="")
    else:
        click_type = _click_type(inner, declared)
        extra.update(type=click_type, metavar=declared.metavar or _metavar(inner, click_type), multiple=many)
    default = _default(declared.default, many)
    shown = default not in (None, False, (), [], "") and inner is not bool
    callback = declared.callback
    if declared.default is not ...:  # see _argument: a required option is given no default
        extra["default"] = default
    return click.Option(
        [*flags, name], required=declared.default is ..., help=declared.help,
        show_default=_shown(default) if shown else False, is_eager=declared.is_eager, hidden=declared.hidden,
        callback=(lambda ctx, param, value: callback(value)) if callback else (_as_list if many else None),
        **extra,
    )


def _shown(default: Any) -> str:
    if isinstance(default, enum.Enum):
        return str(default.value)
    if isinstance(default, tuple):
        return ", ".join(str(d) for d in default)
    return str(default)


def _as_list(ctx: Any, param: Any, value: Any) -> Any:
    """click gives a repeated option or a variadic argument as a tuple; commands take a list."""
    return list(value) if isinstance(value, tuple) else value
