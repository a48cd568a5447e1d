"""How much starting Lens costs, against bare Python measured in the same run.

Prints medians and ratios for:
  * each common command, as a user runs it (the ``lens`` script), against ``python -c pass``
    measured alternately with it (a shared machine's load changes within a run): ``hardware
    list``, ``hardware resolve``, ``hardware show``, ``--help`` (goal <= 4x, 3x hoped for),
    ``cluster inspect --demo``; *cold* (an empty plugin cache: the first run after an install or an
    edit) and *warm* (the cache filled). Every run runs the command: nothing is replayed;
  * ``deploy render`` of one upstream overlay against ``kubectl kustomize`` of the same overlay
    (goal <= 1.5x), when kubectl and an llm-d checkout are there; for ``cluster inspect --demo`` and
    ``plan --demo`` the start-up overhead (the whole process minus the command's own work, timed as a
    second run inside one process) against the floor (goal <= 4x);
  * the libraries' floors the goals sit on, measured in turn with the commands: a table command's
    (click, msgspec and Rich imported, the registry built, one Rich table printed) and ``deploy
    render``'s (click, msgspec and PyYAML imported, the registry built, kustomize run), each without
    Lens's command layer; a ratio near 1x to its floor says a command costs what its libraries do;
  * ``python -c pass`` (the floor), ``import llm_d_lens.hardware``;
  * ``lens hardware list`` with 0, 1 and N installed plugin distributions (real dist-info folders
    with entry points on sys.path), as a user runs it and against the floor measured alternately:
    *cold* (first run after an install: the plugins load in isolated child processes) and *warm*
    (nothing changed since the last run: the cached outcome; goal with N plugins <= 6x);
  * discovery + registry build with N plugins, three ways, each in a fresh process: loading every
    plugin in-process as Lens did before isolation (the reference), isolated cold, isolated warm.

Usage: python bench/startup.py [--runs 7] [--plugins 50] [--llm-d-root PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HEAVY = ("fastapi", "uvicorn", "httpx", "kubernetes", "starlette")
REPO = Path(__file__).resolve().parents[1]
COMMAND_GOAL = 4.0  # x python -c pass (3x hoped for)
RENDER_GOAL = 1.5  # x kubectl kustomize of the same overlay
PLUGINS_GOAL = 6.0  # x python -c pass: hardware list with --plugins installed, their outcome cached
#: label -> arguments, and whether the goal applies
COMMANDS: list[tuple[str, list[str], bool]] = [
    ("lens hardware list", ["hardware", "list"], True),
    ("lens hardware resolve", ["hardware", "resolve", "--resource", "nvidia.com/gpu", "--label",
                               "llm-d.ai/accelerator-vendor=amd", "--label", "llm-d.ai/accelerator-variant=gpu"], True),
    ("lens hardware show", ["hardware", "show", "nvidia"], True),
    ("lens --help", ["--help"], True),
    ("lens cluster inspect --demo", ["cluster", "inspect", "--demo"], False),
]

DISCOVERY_PROBE = """
import json, sys, time
from llm_d_lens.hardware.discovery import discover
from llm_d_lens.hardware.registry import Registry
from llm_d_lens.hardware.settings import PluginSettings
start = time.perf_counter()
registry = Registry.from_discovery(discover(PluginSettings()))
elapsed = time.perf_counter() - start
print(json.dumps({"seconds": elapsed, "profiles": len(registry), "failures": len(registry.failures)}))
"""

#: What discovery cost before isolation: every plugin imported and called in this process.
IN_PROCESS_PROBE = """
import json, time
from importlib.metadata import entry_points
from llm_d_lens.hardware.discovery import PROFILES_GROUP, discover
from llm_d_lens.hardware.loader import validate_payload
from llm_d_lens.hardware.registry import Registry
from llm_d_lens.hardware.settings import PluginSettings
start = time.perf_counter()
found = discover(PluginSettings(), profile_entry_points=[], provider_entry_points=[])
count = len(found.profiles)
for ep in entry_points(group=PROFILES_GROUP):
    for payload in ep.load()():
        validate_payload(payload, ep.name)
        count += ep.dist.name != "llm-d-lens"
Registry.from_discovery(found)
elapsed = time.perf_counter() - start
print(json.dumps({"seconds": elapsed, "profiles": count, "failures": 0}))
"""


def wall(argv: list[str], runs: int, env: dict[str, str] | None = None) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def plugin_profile(i: int) -> dict[str, object]:
    """The profile of bench plugin ``i``: a device-plugin accelerator with its own resource and node label."""
    name = f"benchvendor{i}"
    return {
        "id": name, "display_name": f"Bench Vendor {i}", "vendor": name, "accelerator_keys": [f"{name}-gpu"],
        "benchmark_profile": None, "upstream_variant": name, "upstream_vendor": name,
        "request_model": "extended-resource", "resource_prefixes": [f"{name}.example.com/gpu"],
        "node_label_selector": {f"{name}.example.com/gpu.present": "true"}, "access_modes": ["plugin"],
        "deployment": {"overlay_root": "guides/{guide}/modelserver/{variant}/{model_server}", "arch": name,
                       "resource_name": f"{name}.example.com/gpu"},
    }


def make_plugins(root: Path, count: int) -> None:
    """``count`` distributions, each with one profile entry point, like ``pip install`` leaves them."""
    for i in range(count):
        name = f"benchvendor{i}"
        package = root / f"{name}_lens"
        package.mkdir()
        profile = plugin_profile(i)
        (package / "profile.json").write_text(json.dumps(profile))
        (package / "__init__.py").write_text(
            "import json, pathlib\n"
            "def load_profiles():\n"
            "    return [json.loads((pathlib.Path(__file__).parent / 'profile.json').read_text())]\n"
        )
        info = root / f"{name}_lens-1.0.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-lens\nVersion: 1.0.0\n")
        (info / "entry_points.txt").write_text(f"[llm_d_lens.hardware.profiles]\n{name} = {name}_lens:load_profiles\n")


def plugin_env(extra_path: str | None, cache: str) -> dict[str, str]:
    env = dict(os.environ, LENS_CACHE_DIR=cache)
    if extra_path:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [extra_path, env.get("PYTHONPATH")]))
    return env


def probe_time(probe: str, runs: int, extra_path: str | None, *, cold: bool) -> tuple[float, int]:
    """Median of ``runs`` fresh processes; ``cold`` gives each run an empty plugin cache."""
    samples, profiles = [], 0
    with tempfile.TemporaryDirectory(prefix="lens-bench-cache-") as cache:
        if not cold:  # one run to fill the cache, not measured
            subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, env=plugin_env(extra_path, cache))
        for i in range(runs):
            run_cache = os.path.join(cache, f"cold-{i}") if cold else cache
            out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True,
                                 env=plugin_env(extra_path, run_cache))
            result = json.loads(out.stdout)
            samples.append(result["seconds"])
            profiles = result["profiles"]
    return statistics.median(samples), profiles


def list_time(runs: int, extra_path: str | None, *, cold: bool) -> tuple[float, float]:
    """``lens hardware list -o json`` as a user runs it (the ``lens`` script) with the plugins on ``extra_path``,
    and the floor measured alternately with it: (median, floor's median)."""
    argv = [*lens_argv(), "hardware", "list", "-o", "json"]
    with tempfile.TemporaryDirectory(prefix="lens-bench-cache-") as cache:
        if not cold:
            subprocess.run(argv, check=True, capture_output=True, env=plugin_env(extra_path, cache))
        return paired(argv, runs, lambda i: plugin_env(extra_path, os.path.join(cache, f"cold-{i}") if cold else cache))


def lens_argv() -> list[str]:
    """The ``lens`` script beside this Python (what a user types), else ``python -m llm_d_lens.cli``."""
    script = Path(sys.executable).with_name("lens")
    return [str(script)] if script.exists() else [sys.executable, "-m", "llm_d_lens.cli"]


def paired(argv: list[str], runs: int, env: dict[str, str] | Callable[[int], dict[str, str]]) -> tuple[float, float]:
    """Medians of ``argv`` and of the floor, measured alternately: a shared machine's load hits both alike."""
    floor, took = [], []
    for i in range(runs):
        floor.append(wall([sys.executable, "-c", "pass"], 1))
        took.append(wall(argv, 1, env(i) if callable(env) else env))
    return statistics.median(took), statistics.median(floor)


def command_times(args: list[str], runs: int) -> dict[str, tuple[float, float]]:
    """(median, its floor) of: an empty plugin cache each run (cold), a filled one (warm)."""
    argv = [*lens_argv(), *args]
    with tempfile.TemporaryDirectory(prefix="lens-bench-cache-") as cache:
        shared = plugin_env(None, os.path.join(cache, "shared"))
        out = {"cold": paired(argv, runs, lambda i: plugin_env(None, os.path.join(cache, f"cold-{i}")))}
        subprocess.run(argv, check=True, capture_output=True, env=shared)
        out["warm"] = paired(argv, runs, shared)
    return out


#: commands whose own work is more than start-up: the overhead is the process minus that work
WORKING_COMMANDS: list[tuple[str, list[str]]] = [
    ("lens cluster inspect --demo", ["cluster", "inspect", "--demo"]),
    ("lens plan --demo", ["plan", "--model", "llama-3.1-70b", "--demo"]),
]
OVERHEAD_GOAL = 4.0  # x python -c pass
WORK_PROBE = """
import contextlib, io, json, sys, time
from llm_d_lens.cli.app import main
args = json.loads(sys.argv[1])
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    main(args)  # imports, the registry, the first parse: what every run pays before its work
    start = time.perf_counter()
    main(args)
    took = time.perf_counter() - start
print(took)
"""


def own_work(args: list[str], runs: int) -> float:
    """The command's own work: a second run in a process that already paid for start-up, median of ``runs``."""
    samples = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", WORK_PROBE, json.dumps(args)], capture_output=True, text=True,
                             check=True)
        samples.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(samples)


def overhead_times(args: list[str], runs: int) -> tuple[float, float, float]:
    """(whole process, its own work, the floor), medians; the process and the floor measured alternately."""
    with tempfile.TemporaryDirectory(prefix="lens-bench-cache-") as cache:
        env = plugin_env(None, cache)
        subprocess.run([*lens_argv(), *args], check=True, capture_output=True, env=env)
        whole, floor = paired([*lens_argv(), *args], runs, env)
    return whole, own_work(args, runs), floor


#: what a table command cannot do without: the libraries Lens is built on (click for the command line,
#: msgspec for the contract, Rich for the table), the registry built from the same profiles, one Rich
#: table of them printed, with the ``lens`` script's collector pause and flushed exit without teardown. No Lens
#: command layer: a ratio near 1x says the command costs what its dependencies cost
TABLE_FLOOR_PROBE = """
import gc, os, sys
gc.disable()  # as the lens script starts
import click, msgspec
from rich.console import Console
from rich.table import Table
from llm_d_lens.hardware.registry import get_registry
table = Table(title="profiles")
for header in ("ID", "NAME", "VENDOR"):
    table.add_column(header)
for profile in get_registry().profiles():
    table.add_row(profile.id, profile.display_name, profile.vendor)
Console(width=160).print(table)
sys.stdout.flush()
os._exit(0)
"""
#: what ``deploy render`` cannot do without: the same libraries (PyYAML instead of Rich, for the
#: kustomizations read to choose the overlay), the registry, and kustomize run on the overlay
RENDER_FLOOR_PROBE = """
import gc, os, subprocess, sys
gc.disable()  # as the lens script starts
import click, msgspec, yaml
from llm_d_lens.hardware.registry import get_registry
get_registry()
sys.stdout.write(subprocess.run(sys.argv[1:], capture_output=True, text=True, check=True).stdout)
sys.stdout.flush()
os._exit(0)
"""


def table_floor_times(runs: int) -> tuple[float, float, float]:
    """(``lens hardware list`` warm, the libraries' floor, ``python -c pass``), medians, measured in turn."""
    argv = [*lens_argv(), "hardware", "list"]
    probe = [sys.executable, "-c", TABLE_FLOOR_PROBE]
    with tempfile.TemporaryDirectory(prefix="lens-bench-cache-") as cache:
        env = plugin_env(None, cache)
        subprocess.run(argv, check=True, capture_output=True, env=env)
        subprocess.run(probe, check=True, capture_output=True, env=env)
        lens, libraries, bare = [], [], []
        for _ in range(runs):
            bare.append(wall([sys.executable, "-c", "pass"], 1))
            libraries.append(wall(probe, 1, env))
            lens.append(wall(argv, 1, env))
    return statistics.median(lens), statistics.median(libraries), statistics.median(bare)


def default_root(given: str | None) -> Path:
    for candidate in (given, os.environ.get("LENS_LLM_D_ROOT"), os.environ.get("LLM_D_ROOT")):
        if candidate:
            return Path(candidate)
    return REPO / ".." / "shared" / "upstream" / "llm-d"


def render_times(root: Path, runs: int) -> tuple[str, float, float, float] | str:
    """``lens deploy render``, ``kubectl kustomize`` of its overlay and the libraries' floor around that
    kustomize (:data:`RENDER_FLOOR_PROBE`), measured in turn; or why not."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return "kubectl is not installed"
    if not (root / "guides").is_dir():
        return f"no llm-d checkout at {root} (set LENS_LLM_D_ROOT or --llm-d-root)"
    from llm_d_lens.deploy.service import describe_guides

    rows = [r for r in describe_guides(root=root)["overlays"] if r["status"] == "ok"]
    if not rows:
        return "no overlay of that checkout renders"
    row = rows[0]
    render = [*lens_argv(), "deploy", "render", "--llm-d-root", str(root), "--guide", row["guide"], "--hardware",
              row["hardware"], "--model-server", row["model_server"], "--overlay", row["overlay"]]
    kustomize = [kubectl, "kustomize", str(root / row["path"])]
    subprocess.run(render, check=True, capture_output=True)  # the plugin cache filled, as for any later run
    libraries = [sys.executable, "-c", RENDER_FLOOR_PROBE, *kustomize]
    lens_s, floor_s, libraries_s = [], [], []
    for _ in range(runs):
        floor_s.append(wall(kustomize, 1))
        libraries_s.append(wall(libraries, 1))
        lens_s.append(wall(render, 1))
    return row["path"], statistics.median(lens_s), statistics.median(floor_s), statistics.median(libraries_s)


def heavy_modules_after_list() -> list[str]:
    probe = ("import sys\nfrom llm_d_lens.cli.app import main\nmain(['hardware', 'list', '-o', 'json'])\n"
             f"print('HEAVY=' + ','.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    line = next(l for l in result.stderr.splitlines() if l.startswith("HEAVY="))
    return [m for m in line.removeprefix("HEAVY=").split(",") if m]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--plugins", type=int, default=50)
    parser.add_argument("--llm-d-root", default=None, help="llm-d checkout for deploy render (default: ../shared/upstream/llm-d)")
    args = parser.parse_args(argv)

    floor = wall([sys.executable, "-c", "pass"], args.runs)
    imported = wall([sys.executable, "-c", "import llm_d_lens.hardware.registry"], args.runs)
    print(f"python -c pass                 median {floor * 1000:8.1f} ms  (floor)")
    print(f"import hardware registry       median {imported * 1000:8.1f} ms  ratio {imported / floor:5.1f}x")

    for label, command, goal in COMMANDS:  # each against a floor measured alongside it
        for how, (took, beside) in command_times(command, args.runs).items():
            ratio = took / beside
            verdict = f"  goal <= {COMMAND_GOAL:g}x: {'met' if ratio <= COMMAND_GOAL else 'missed'}" if goal else ""
            print(f"{label + ', ' + how:<44} median {took * 1000:8.1f} ms  ratio {ratio:5.1f}x{verdict}")
    lens_list, libraries, beside = table_floor_times(args.runs)
    print(f"table commands' libraries' floor (click, msgspec, rich, the registry, one table): median "
          f"{libraries * 1000:.1f} ms, ratio {libraries / beside:.1f}x; lens hardware list (warm) "
          f"{lens_list / libraries:.2f}x that floor")
    for label, command in WORKING_COMMANDS:
        whole, work, beside = overhead_times(command, args.runs)
        ratio = max(0.0, whole - work) / beside
        print(f"{label + ', start-up overhead':<44} median {(whole - work) * 1000:8.1f} ms  ratio {ratio:5.1f}x  "
              f"(whole {whole * 1000:.1f} ms, own work {work * 1000:.1f} ms)  goal <= {OVERHEAD_GOAL:g}x: "
              f"{'met' if ratio <= OVERHEAD_GOAL else 'missed'}")
    rendered = render_times(default_root(args.llm_d_root), args.runs)
    if isinstance(rendered, str):
        print(f"lens deploy render: skipped ({rendered})")
    else:
        path, lens_s, kustomize_s, libraries_s = rendered
        ratio = lens_s / kustomize_s
        print(f"lens deploy render {path}: median {lens_s * 1000:.1f} ms, kubectl kustomize {kustomize_s * 1000:.1f} ms, "
              f"ratio {ratio:.2f}x  goal <= {RENDER_GOAL:g}x: {'met' if ratio <= RENDER_GOAL else 'missed'}")
        print(f"deploy render's libraries' floor (click, msgspec, yaml, the registry, kustomize): median "
              f"{libraries_s * 1000:.1f} ms, ratio {libraries_s / kustomize_s:.2f}x kubectl kustomize; "
              f"lens deploy render {lens_s / libraries_s:.2f}x that floor")

    with tempfile.TemporaryDirectory(prefix="lens-bench-plugins-") as tmp:
        sites = {0: None}
        for count in sorted({1, args.plugins}):
            site = Path(tmp) / f"site-{count}"
            site.mkdir()
            make_plugins(site, count)
            sites[count] = str(site)
        for count, site in sites.items():
            for cold in ((False,) if count == 0 else (True, False)):
                took, beside = list_time(args.runs, site, cold=cold)
                label = f"lens hardware list, {count} plugins{' (cold)' if cold else ' (warm)' if count else ''}"
                verdict = (f"  goal <= {PLUGINS_GOAL:g}x: {'met' if took / beside <= PLUGINS_GOAL else 'missed'}"
                           if count == args.plugins and count > 1 and not cold else "")
                print(f"{label:<40} median {took * 1000:8.1f} ms  ratio {took / beside:5.1f}x{verdict}")

        base, base_profiles = probe_time(DISCOVERY_PROBE, args.runs, None, cold=False)
        many_site = sites[args.plugins]
        before, before_profiles = probe_time(IN_PROCESS_PROBE, args.runs, many_site, cold=False)
        cold, cold_profiles = probe_time(DISCOVERY_PROBE, args.runs, many_site, cold=True)
        warm, warm_profiles = probe_time(DISCOVERY_PROBE, args.runs, many_site, cold=False)
    print(f"discovery, 0 plugins           median {base * 1000:8.1f} ms  profiles {base_profiles}")
    n = f"{args.plugins} plugins"
    print(f"discovery, {n:<20}in-process (before isolation) median {before * 1000:8.1f} ms  profiles {before_profiles}  (reference)")
    print(f"discovery, {n:<20}isolated, cold                median {cold * 1000:8.1f} ms  profiles {cold_profiles}  "
          f"ratio {cold / before:5.2f}x the reference")
    print(f"discovery, {n:<20}isolated, warm (cached)       median {warm * 1000:8.1f} ms  profiles {warm_profiles}  "
          f"ratio {warm / before:5.2f}x the reference")
    heavy = heavy_modules_after_list()
    print(f"heavy modules imported by 'lens hardware list': {', '.join(heavy) if heavy else 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
