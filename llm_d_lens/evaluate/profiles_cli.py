"""``lens profiles``: the workload profiles on a search path, for people and for other tooling."""

from __future__ import annotations

import shlex
from typing import Any

from llm_d_lens.terminal import commands
from llm_d_lens.terminal.options import OutputOption
from llm_d_lens.terminal.output import ListFormat, OutputFormat, TextFormat, emit, list_output_option

app = commands.Group(no_args_is_help=True)

ProfileDirOption = commands.Option(
    [], "--profile-dir", metavar="DIR",
    help="A directory of profiles searched after the built-in one; repeatable, later ones override earlier ones.",
)
#: text (the default) is the one line a shell script uses as it is, as before -o existed here
TextOutputOption = commands.Option(TextFormat.text, "--output", "-o", help="text (one line, for a shell), json or yaml.")
NameArgument = commands.Argument("default", metavar="NAME", help="Profile name (the file stem).")


@app.command("list")
def list_command(profile_dir: list[str] = ProfileDirOption, output: ListFormat = list_output_option()) -> None:
    """The profiles that can be selected, and which file each comes from."""
    from llm_d_lens.evaluate.profiles import SearchPath, listing

    rows = listing(SearchPath.of(profile_dir))

    def table(rows: list[dict[str, Any]], wide: bool = False) -> Any:
        from llm_d_lens.terminal.output import Column, columns_table

        columns = [Column("NAME"), Column("DEPLOYMENT"), Column("DESCRIPTION"), Column("FILE", wide_only=True)]
        shown = []
        for r in rows:
            description = r["description"] if r["valid"] else f"[red]invalid: {r['problems']} problem(s)[/red]"
            where = r["path"] + "".join(f"\n[dim]overrides {p}[/dim]" for p in r["overrides"])
            shown.append([r["name"], r.get("deployment", "-"), description, where])
        return columns_table(columns, shown, wide=wide, title=f"{len(rows)} workload profiles")

    emit(rows, output, table, names=lambda rows: [r["name"] for r in rows])


@app.command("compose-file")
def compose_file(name: str = NameArgument, profile_dir: list[str] = ProfileDirOption,
                 output: TextFormat = TextOutputOption) -> None:
    """The profile's compose file as an absolute path; nothing (exit 0) when it is deployed externally."""
    from llm_d_lens.evaluate.profiles import SearchPath

    path = SearchPath.of(profile_dir).load(name).compose_path()
    result = {"name": name, "compose_file": str(path) if path is not None else None}
    emit(result, output, lambda data: data["compose_file"] or "")


@app.command("flags")
def flags(name: str = NameArgument, profile_dir: list[str] = ProfileDirOption,
          output: TextFormat = TextOutputOption) -> None:
    """The profile's benchmark_options as command-line flags, shell-quoted on one line (-o json: a list)."""
    from llm_d_lens.evaluate.flags import to_flags
    from llm_d_lens.evaluate.profiles import SearchPath

    listed = to_flags(SearchPath.of(profile_dir).load(name).profile.benchmark_options)
    emit({"name": name, "flags": listed, "command_line": shlex.join(listed)}, output, lambda data: data["command_line"])


@app.command("validate")
def validate(profile_dir: list[str] = ProfileDirOption, output: OutputFormat = OutputOption) -> None:
    """Check every profile file on the search path (fields, cross-field rules, parallelism against the
    hardware block) and report every problem; exit 1 if any."""
    from llm_d_lens.evaluate.profiles import SearchPath, validate_all

    results = validate_all(SearchPath.of(profile_dir))

    def table(results: list[dict[str, Any]]) -> Any:
        from rich.console import Group
        from rich.text import Text

        parts = []
        for r in results:
            if r["valid"]:
                parts.append(Text(f"✓ {r['name']} ({r['path']})", style="green"))
                continue
            parts.append(Text(f"✗ {r['name']} ({r['path']}): {len(r['issues'])} problem(s)", style="red bold"))
            parts += [Text(f"    {i['path']}: {i['message']}" if i["path"] else f"    {i['message']}") for i in r["issues"]]
        return Group(*parts)

    emit(results, output, table)
    if not all(r["valid"] for r in results):
        raise commands.Exit(1)
