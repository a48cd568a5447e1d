"""Every command that prints a table reads well in an 80- and a 120-column terminal, and ``-o wide`` hides nothing.

The commands are enumerated from the Typer app itself: a new command whose ``--output`` offers
``table`` fails :func:`test_every_table_command_has_a_sample` until it is given a sample run here,
so it cannot skip the readability checks. Each sample runs through the real ``lens`` entry point
with ``$COLUMNS`` set (what a terminal of that width exports); the Rich tables it prints are
recorded on their way to the terminal so the checks know each table's own headers and cells.

Commands that need a cluster read a recording FakeRunner holding real-shaped objects (the one the
least-privilege proof uses); those that need Prometheus ask a real one, backfilled with the shared
exporter samples (skipped with the reason when the binary is absent).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from llm_d_lens.cli.app import main
from llm_d_lens.testing.tables import camel_keys, commands_offering

PACKAGE = Path(__file__).resolve().parents[1]
LLM_D = PACKAGE.parent / ".." / "shared" / "upstream" / "llm-d"
PROFILE = PACKAGE / "hardware" / "profiles" / "nvidia.json"
DEVICE_PAGE = PACKAGE / "monitoring" / "accelerator" / "testdata" / "amd-cpx-partitions.prom"
TOOL_PAGE = PACKAGE / "cluster" / "testdata" / "nvidia-smi-noheader-nounits.csv"

#: what a sample needs besides the package: "cluster" (the FakeRunner), "prometheus", "llm-d", "tmp"
Sample = tuple[list[str], frozenset[str]]


def _s(*args: str, needs: str = "") -> Sample:
    return list(args), frozenset(n for n in needs.split(",") if n)


#: command path -> one run of it that prints its table (the readability checks apply to all of them)
SAMPLES: dict[str, Sample] = {
    "version": _s("version", needs="cluster"),
    "hardware list": _s("hardware", "list"),
    "hardware network": _s("hardware", "network"),
    "hardware show": _s("hardware", "show", "nvidia"),
    "hardware validate": _s("hardware", "validate", str(PROFILE)),
    "hardware resolve": _s("hardware", "resolve", "--resource", "nvidia.com/mig-1g.10gb", "--device-class",
                           "gpu.intel.com", "--label", "llm-d.ai/accelerator-vendor=amd", "--resource",
                           "example.com/unknown-accelerator"),
    "hardware new": _s("hardware", "new", "acme-npu", "--vendor", "acme", "--resource-name", "acme.com/npu",
                       "--node-label", "acme.com/npu.present=true", "--dir", "{tmp}/acme", needs="tmp"),
    "hardware doctor": _s("hardware", "doctor"),
    "evaluate coverage": _s("evaluate", "coverage", "--prometheus", "{prometheus}", "--start", "1767225500",
                            "--end", "1767225600", needs="prometheus"),
    "profiles list": _s("profiles", "list"),
    "profiles validate": _s("profiles", "validate"),
    "driver plan": _s("driver", "plan", "--device-class", "gpu.nvidia.com", "--device-class", "dra.cpu",
                      "--resource", "google.com/tpu", "--resource", "amd.com/gpu", needs="cluster"),
    "driver status": _s("driver", "status", needs="cluster"),
    "driver install": _s("driver", "install", "--hardware", "amd", "--mode", "dra", "--dry-run", needs="cluster"),
    "preflight": _s("preflight", "--hardware", "nvidia", "--hardware", "amd", "--timeout", "0", needs="cluster"),
    "deploy guides": _s("deploy", "guides", "--llm-d-root", str(LLM_D), needs="llm-d"),
    "telemetry devices": _s("telemetry", "devices", "--snapshot", str(DEVICE_PAGE), "--hardware", "amd"),
    "telemetry pods": _s("telemetry", "pods", "--prometheus", "{prometheus}", "--at", "{at}", needs="prometheus"),
    "telemetry queries": _s("telemetry", "queries", "--hardware", "nvidia"),
    "telemetry exporters": _s("telemetry", "exporters", needs="cluster"),
    "telemetry exporters install": _s("telemetry", "exporters", "install", "--hardware", "amd", "--dry-run",
                                      needs="cluster"),
    "cluster inspect": _s("cluster", "inspect", "--demo", "--nodes"),
    "cluster list": _s("cluster", "list", "--clusters", "{tmp}/clusters.yaml", needs="tmp"),
    "incluster check": _s("incluster", "check", needs="cluster"),
    "plan": _s("plan", "--demo", "--model", "llama-3.1-70b", "--all"),
    "plan models": _s("plan", "models"),
    "plan discover": _s("plan", "discover", "--hardware", "nvidia", "--from-file", str(TOOL_PAGE)),
}


def test_every_table_command_has_a_sample() -> None:
    commands = commands_offering("table")
    assert len(commands) > 20
    missing = sorted(set(commands) - set(SAMPLES))
    assert not missing, f"give these commands a sample run in SAMPLES so their tables are checked: {missing}"
    assert not sorted(set(SAMPLES) - set(commands)), "a sample for a command that prints no table"


# -- running a sample ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def prometheus() -> Iterator[Any]:
    from llm_d_lens.monitoring.conftest import stored_pages
    from llm_d_lens.testing.telemetry_pages import backfill
    from llm_d_lens.testing.prometheus import run_prometheus, skip_reason

    if skip_reason():
        pytest.skip(skip_reason() or "")
    with run_prometheus(backfill(*stored_pages())) as server:
        yield server


class Printed:
    """The renderables ``lens`` printed to stdout, recorded as Rich prints them."""

    def __init__(self) -> None:
        self.renderables: list[Any] = []

    def tables(self) -> list[Any]:
        from rich.console import Group
        from rich.table import Table

        found: list[Any] = []

        def visit(item: Any) -> None:
            if isinstance(item, Table):
                found.append(item)
            elif isinstance(item, Group):
                for inner in item.renderables:
                    visit(inner)
            elif isinstance(item, (list, tuple)):
                for inner in item:
                    visit(inner)

        visit(self.renderables)
        return found


def run_sample(name: str, width: int | None, extra: list[str], request: pytest.FixtureRequest,
               monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, Printed]:
    """Run one sample as a user would, at ``width`` columns (``None``: piped, no ``$COLUMNS``)."""
    from rich.console import Console

    args, needs = SAMPLES[name]
    fills: dict[str, str] = {}
    if "llm-d" in needs and not (LLM_D / "guides").is_dir():
        pytest.skip(f"no llm-d checkout at {LLM_D} (the shared upstream copy)")
    if "prometheus" in needs:
        from llm_d_lens.testing.prometheus import BASE_TIMESTAMP

        fills.update(prometheus=request.getfixturevalue("prometheus").url, at=str(BASE_TIMESTAMP))
    if "tmp" in needs:
        tmp_path.mkdir(parents=True, exist_ok=True)
        fills["tmp"] = str(tmp_path)
        (tmp_path / "clusters.yaml").write_text(
            "clusters:\n  - name: demo\n    display_name: Demo (embedded)\n    labels: {environment: demo}\n"
            "    demo: true\n  - name: lab-east-with-a-long-name\n    labels: {region: us-east-1, team: inference}\n"
            "    demo: true\n", encoding="utf-8")
    if "cluster" in needs:
        if shutil.which("kubectl") is None:
            pytest.skip("kubectl is not installed (the recording fake runs the real `kubectl kustomize`)")
        from llm_d_lens.incluster.test_least_privilege import cluster

        fake = cluster()
        fake.reply(["kubectl", "version", "--client", "-o", "json"],
                   json_body={"clientVersion": {"gitVersion": "v1.33.1"}})
        fake.reply(["helm", "version", "--short"], stdout="v3.17.2+gcc0bbbd\n")
        fake.reply(["kustomize", "version"], stdout="v5.6.0\n")
        fake.reply(["kubectl", "auth", "can-i", ...], stdout="yes\n")
        monkeypatch.setattr("llm_d_lens.runner.CommandRunner", lambda *a, **k: fake)
    if width is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setenv("LENS_NO_PROGRESS", "1")

    printed = Printed()
    original: Callable[..., Any] = Console.print

    def recording(self: Any, *objects: Any, **kwargs: Any) -> Any:
        if not self.stderr:
            printed.renderables.extend(objects)
        return original(self, *objects, **kwargs)

    monkeypatch.setattr(Console, "print", recording)
    code = main([a.format(**fills) for a in [*args, *extra]])
    out = capsys.readouterr()
    assert code in (0, 1), f"{name}: exit {code}\n{out.err}"
    assert out.out.strip(), f"{name} printed nothing:\n{out.err}"
    return out.out, printed


# -- what "readable" means -------------------------------------------------------------------------

NUMBER = re.compile(r"^-?[\d,]+(\.\d+)?$")
#: a number followed by a unit: the unit belongs in the header
NUMBER_WITH_UNIT = re.compile(r"^-?[\d,]+(\.\d+)?\s?(GiB|MiB|GB|MB|W|%|°C|s|ms)$")
TOKEN = re.compile(r"[^\s│┃┆┊║|─━┏┓┗┛┡┩┠┨┯┷┿╇╋┳┻┣┫├┤┬┴┼└┘┌┐]+")


def _plain(cell: Any) -> str:
    return cell.plain if hasattr(cell, "plain") else str(cell)


def check_readable(name: str, text: str, printed: Printed, width: int) -> None:
    # one shell word longer than a line (a command's value) cannot break and stays whole to copy, and
    # a command to copy (a plan's hand-off: `lens ...`, or the engine arguments it needs) is one line
    # however long, since a wrapped one breaks when pasted
    too_long = [line for line in text.splitlines() if len(line) > width and len(line.removesuffix(" \\").split()) > 1
                and not line.lstrip().startswith(("lens ", "--"))]
    assert not too_long, f"{name}: lines wider than {width}:\n" + "\n".join(too_long[:3])
    assert "…" not in text, f"{name}: an ellipsis at {width} columns hides a value:\n{text}"
    tokens = set(TOKEN.findall(text))
    for table in printed.tables():
        headers = [_plain(column.header) for column in table.columns]
        if table.show_header:
            assert len(set(headers)) == len(headers), f"{name}: headers repeat: {headers}"
            for header in headers:
                for word in header.split():
                    assert word in tokens, f"{name}: header {header!r} is cut at {width} columns:\n{text}"
        for column in table.columns:
            cells = [_plain(c) for c in column.cells if _plain(c).strip() not in ("", "-")]
            if cells and all(NUMBER.match(c.strip()) for c in cells):
                assert column.justify == "right", f"{name}: numbers in {_plain(column.header)!r} are not right-aligned"
            with_unit = [c for c in cells if NUMBER_WITH_UNIT.match(c.strip())]
            assert not with_unit, f"{name}: units in cells of {_plain(column.header)!r} (put them in the header): {with_unit[:2]}"


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_table_fits_with_whole_distinct_headers(name: str, width: int, request, monkeypatch, tmp_path, capsys) -> None:
    text, printed = run_sample(name, width, [], request, monkeypatch, tmp_path, capsys)
    check_readable(name, text, printed, width)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_wide_shows_every_column_of_the_default_table(name: str, request, monkeypatch, tmp_path, capsys) -> None:
    text, printed = run_sample(name, 80, [], request, monkeypatch, tmp_path / "t", capsys)
    default = [[_plain(c.header) for c in t.columns] for t in printed.tables() if t.show_header]
    wide_text, wide = run_sample(name, None, ["-o", "wide"], request, monkeypatch, tmp_path / "w", capsys)
    shown = [[_plain(c.header) for c in t.columns] for t in wide.tables() if t.show_header]
    assert "…" not in wide_text, f"{name} -o wide cut a value:\n{wide_text}"
    assert len(shown) == len(default), f"{name}: -o wide prints other tables than the default"
    for narrow, every in zip(default, shown):
        assert set(narrow) <= set(every), f"{name}: -o wide lost {sorted(set(narrow) - set(every))}"


# -- one naming ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_json_keys_are_snake_case(name: str, request, monkeypatch, tmp_path, capsys) -> None:
    import json

    text, _ = run_sample(name, None, ["-o", "json"], request, monkeypatch, tmp_path, capsys)
    assert not camel_keys(json.loads(text)), f"{name} -o json: camelCase keys {camel_keys(json.loads(text))[:8]}"
