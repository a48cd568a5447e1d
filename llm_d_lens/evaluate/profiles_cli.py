"""``lens profiles``: the workload profiles on a search path, for people and for other tooling."""

from __future__ import annotations

import shlex
from typing import Any

import typer

from llm_d_lens.output import OutputFormat, emit

app = typer.Typer(no_args_is_help=True)

OutputOption = typer.Option(OutputFormat.table, "--output", "-o", help="table, wide, json or yaml.")
ProfileDirOption = typer.Option(
    [], "--profile-dir", metavar="DIR",
    help="A directory of profiles searched after the built-in one; repeatable, later ones override earlier ones.",
)
NameArgument = typer.Argument("default", metavar="NAME", help="Profile name (the file stem).")


@app.command("list")
def list_command(profile_dir: list[str] = ProfileDirOption, output: OutputFormat = OutputOption) -> None:
    """The profiles that can be selected, and which file each comes from."""
    from llm_d_lens.evaluate.profiles import SearchPath, listing

    rows = listing(SearchPath.of(profile_dir))

    def table(rows: list[dict[str, Any]]) -> Any:
        from rich.table import Table

        t = Table(title=f"{len(rows)} workload profiles")
        for column in ("name", "description", "deployment", "file"):
            t.add_column(column)
        for r in rows:
            description = r["description"] if r["valid"] else f"[red]invalid: {r['problems']} problem(s)[/red]"
            where = r["path"] + "".join(f"\n[dim]overrides {p}[/dim]" for p in r["overrides"])
            t.add_row(r["name"], description, r.get("deployment", "-"), where)
        return t

    emit(rows, output, table)


@app.command("compose-file")
def compose_file(name: str = NameArgument, profile_dir: list[str] = ProfileDirOption) -> None:
    """The profile's compose file as an absolute path; nothing (exit 0) when it is deployed externally."""
    from llm_d_lens.evaluate.profiles import SearchPath

    path = SearchPath.of(profile_dir).load(name).compose_path()
    if path is not None:
        typer.echo(str(path))


@app.command("flags")
def flags(name: str = NameArgument, profile_dir: list[str] = ProfileDirOption) -> None:
    """The profile's benchmark_options as command-line flags, shell-quoted on one line."""
    from llm_d_lens.evaluate.flags import to_flags
    from llm_d_lens.evaluate.profiles import SearchPath

    typer.echo(shlex.join(to_flags(SearchPath.of(profile_dir).load(name).profile.benchmark_options)))


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
        raise typer.Exit(1)
