"""How much starting Lens costs, against bare Python measured in the same run.

Prints medians and ratios for:
  * ``python -c pass`` (the floor), ``import llm_d_lens.hardware``, ``lens hardware list``;
  * discovery + registry build with 0 and with N installed plugin distributions (real
    dist-info folders with entry points on sys.path), each in a fresh process.

Usage: python bench/startup.py [--runs 7] [--plugins 50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("fastapi", "uvicorn", "httpx", "kubernetes", "starlette")

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


def wall(argv: list[str], runs: int, env: dict[str, str] | None = None) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def make_plugins(root: Path, count: int) -> None:
    """``count`` distributions, each with one profile entry point, like ``pip install`` leaves them."""
    for i in range(count):
        name = f"benchvendor{i}"
        package = root / f"{name}_lens"
        package.mkdir()
        profile = {
            "id": name, "display_name": f"Bench Vendor {i}", "vendor": name, "accelerator_keys": [f"{name}-gpu"],
            "benchmark_profile": None, "upstream_variant": name, "upstream_vendor": name,
            "request_model": "extended-resource", "resource_prefixes": [f"{name}.example.com/gpu"],
            "node_label_selector": {f"{name}.example.com/gpu.present": "true"}, "access_modes": ["plugin"],
            "deployment": {"overlay_root": "guides/{guide}/modelserver/{variant}/{model_server}", "arch": name,
                           "resource_name": f"{name}.example.com/gpu"},
        }
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


def discovery_time(runs: int, extra_path: str | None) -> tuple[float, int]:
    env = dict(os.environ)
    if extra_path:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [extra_path, env.get("PYTHONPATH")]))
    samples, profiles = [], 0
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", DISCOVERY_PROBE], check=True, capture_output=True, text=True, env=env)
        result = json.loads(out.stdout)
        samples.append(result["seconds"])
        profiles = result["profiles"]
    return statistics.median(samples), profiles


def heavy_modules_after_list() -> list[str]:
    probe = ("import sys\nfrom llm_d_lens.cli import main\nmain(['hardware', 'list', '-o', 'json'])\n"
             f"print('HEAVY=' + ','.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    line = next(l for l in result.stderr.splitlines() if l.startswith("HEAVY="))
    return [m for m in line.removeprefix("HEAVY=").split(",") if m]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--plugins", type=int, default=50)
    args = parser.parse_args(argv)

    floor = wall([sys.executable, "-c", "pass"], args.runs)
    imported = wall([sys.executable, "-c", "import llm_d_lens.hardware.registry"], args.runs)
    listed = wall([sys.executable, "-m", "llm_d_lens.cli", "hardware", "list", "-o", "json"], args.runs)
    print(f"python -c pass                 median {floor * 1000:8.1f} ms  (floor)")
    print(f"import hardware registry     median {imported * 1000:8.1f} ms  ratio {imported / floor:5.1f}x")
    print(f"lens hardware list             median {listed * 1000:8.1f} ms  ratio {listed / floor:5.1f}x")

    base, base_profiles = discovery_time(args.runs, None)
    with tempfile.TemporaryDirectory(prefix="lens-bench-plugins-") as tmp:
        make_plugins(Path(tmp), args.plugins)
        many, many_profiles = discovery_time(args.runs, tmp)
    print(f"discovery, 0 plugins           median {base * 1000:8.1f} ms  profiles {base_profiles}")
    print(f"discovery, {args.plugins} plugins{' ' * (10 - len(str(args.plugins)))}median {many * 1000:8.1f} ms  "
          f"profiles {many_profiles}  ratio {many / base:5.1f}x  per plugin {(many - base) / max(args.plugins, 1) * 1000:.2f} ms")
    heavy = heavy_modules_after_list()
    print(f"heavy modules imported by 'lens hardware list': {', '.join(heavy) if heavy else 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
