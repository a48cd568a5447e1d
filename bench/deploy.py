"""How much Lens adds to kustomize, and how discovery scales with the size of an llm-d checkout.

Three measurements, each against a floor taken in the same run:

* render: ``lens``'s whole render job (resolve the overlay, ``kubectl kustomize``, fit, validate)
  for every upstream overlay that renders, against plain ``kubectl kustomize`` of the same
  directory. Goal: at most 1.2x.
* cli: the ``lens deploy render`` command (start-up included) against ``kubectl kustomize`` of the
  same overlay, goal at most 1.3x; and ``lens deploy guides`` against ``find`` of the tree's
  Kustomizations, for information.
* discovery: finding every overlay of every profile in the real tree copied N times (N guides),
  against ``os.walk`` over the same copy. Goal: at most 2x. Reading every Kustomization as well
  (what ``lens deploy guides`` does) is printed too, for information.

Usage: python bench/deploy.py [--llm-d-root PATH] [--copies 50] [--repeat 5] [--max-overlays N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from llm_d_lens.deploy.discovery import discover  # noqa: E402
from llm_d_lens.deploy.service import RenderRequest, describe_guides, render  # noqa: E402
from llm_d_lens.deploy.source import LlmdSource  # noqa: E402
from llm_d_lens.hardware.registry import get_registry  # noqa: E402
from llm_d_lens.runner import CommandRunner  # noqa: E402

RENDER_GOAL = 1.2
CLI_RENDER_GOAL = 1.3
DISCOVERY_GOAL = 2.0


def default_root() -> Path:
    for candidate in (os.environ.get("LENS_LLM_D_ROOT"), os.environ.get("LLM_D_ROOT")):
        if candidate:
            return Path(candidate)
    return REPO / ".." / "shared" / "upstream" / "llm-d"


def median_time(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def paired(lens: Callable[[], object], floor: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Medians of both, measured alternately so a slow moment of the machine hits both alike."""
    lens_times, floor_times = [], []
    for _ in range(repeat):
        floor_times.append(median_time(floor, 1))
        lens_times.append(median_time(lens, 1))
    return statistics.median(lens_times), statistics.median(floor_times)


def bench_render(root: Path, repeat: int, limit: int | None) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print("render: skipped (kubectl is not installed; the floor is `kubectl kustomize`)")
        return
    report = describe_guides(root=root)
    runner = CommandRunner()
    renderable = [o for o in report["overlays"] if o["status"] == "ok"][:limit]
    print(f"render: {len(renderable)} overlays, {repeat} runs each, medians")
    total_lens = total_floor = 0.0
    for row in renderable:
        request = RenderRequest(guide=row["guide"], hardware=row["hardware"], model_server=row["model_server"],
                                overlay=row["overlay"])
        directory = str(root / row["path"])

        def lens(request: RenderRequest = request) -> object:
            return render(request, root=root, runner=runner)

        def floor(directory: str = directory) -> object:
            return subprocess.run([kubectl, "kustomize", directory], check=True, capture_output=True)

        lens()  # warm: the first call pays for imports and the registry, not for rendering
        lens_s, floor_s = paired(lens, floor, repeat)
        total_lens += lens_s
        total_floor += floor_s
        print(f"render {row['path']}: lens {lens_s:.3f} s, kubectl kustomize {floor_s:.3f} s, ratio {lens_s / floor_s:.2f}")
    if renderable:
        print(f"render total: lens {total_lens:.3f} s, kubectl kustomize {total_floor:.3f} s, "
              f"ratio {total_lens / total_floor:.2f} (goal <= {RENDER_GOAL})")


def bench_cli(root: Path, repeat: int) -> None:
    """What a user waits for: the `lens` command against the command it wraps, start-up included."""
    kubectl = shutil.which("kubectl")
    lens = shutil.which("lens", path=str(Path(sys.executable).parent)) or shutil.which("lens")
    if kubectl is None or lens is None:
        print("cli: skipped (" + ("kubectl" if kubectl is None else "the lens command") + " is not installed)")
        return
    rows = [r for r in describe_guides(root=root)["overlays"] if r["status"] == "ok"]
    if not rows:
        print("cli: skipped (no renderable overlay)")
        return
    row = rows[0]
    render_argv = [lens, "deploy", "render", "--llm-d-root", str(root), "--guide", row["guide"], "--hardware", row["hardware"],
                   "--model-server", row["model_server"], "--overlay", row["overlay"]]

    def run(argv: list[str]) -> Callable[[], object]:
        return lambda: subprocess.run(argv, check=True, capture_output=True)

    lens_s, floor_s = paired(run(render_argv), run([kubectl, "kustomize", str(root / row["path"])]), repeat)
    print(f"cli render {row['path']}: lens {lens_s:.3f} s, kubectl kustomize {floor_s:.3f} s, "
          f"ratio {lens_s / floor_s:.2f} (goal <= {CLI_RENDER_GOAL})")
    find = shutil.which("find")
    if find is None:
        print("cli guides: skipped (find is not installed)")
        return
    lens_s, floor_s = paired(run([lens, "deploy", "guides", "--llm-d-root", str(root), "-o", "json"]),
                             run([find, str(root), "-name", "kustomization.yaml"]), repeat)
    print(f"cli guides: lens {lens_s:.3f} s, find of its Kustomizations {floor_s:.3f} s, ratio {lens_s / floor_s:.2f}")


def copied_tree(root: Path, copies: int, into: Path) -> Path:
    """The real tree with each guide copied ``copies`` times (``<guide>-<i>``), shared recipes once."""
    target = into / "llm-d"
    guides = root / "guides"
    for entry in sorted(guides.iterdir()):
        if not entry.is_dir():
            continue
        if (entry / "modelserver").is_dir() and entry.name != "recipes":
            for i in range(copies):
                shutil.copytree(entry, target / "guides" / f"{entry.name}-{i}", symlinks=True)
        else:
            shutil.copytree(entry, target / "guides" / entry.name, symlinks=True)
    return target


def bench_discovery(root: Path, copies: int, repeat: int) -> None:
    registry = get_registry()
    with tempfile.TemporaryDirectory(prefix="lens-bench-") as scratch:
        tree = copied_tree(root, copies, Path(scratch))
        source = LlmdSource(tree.resolve(), str(tree))
        directories = sum(1 for _ in os.walk(tree))

        def walk() -> object:
            return [len(files) for _, _, files in os.walk(tree)]

        def find() -> object:
            return discover(source, registry)

        overlays = len(discover(source, registry).overlays)
        lens_s, floor_s = paired(find, walk, repeat)
        print(f"discovery over {copies} copies ({overlays} overlays, {directories} directories): "
              f"lens {lens_s:.4f} s, os.walk {floor_s:.4f} s, ratio {lens_s / floor_s:.2f} (goal <= {DISCOVERY_GOAL})")

        def guides() -> object:
            return describe_guides(root=tree, registry=registry)

        labels_s, floor_s = paired(guides, walk, repeat)
        print(f"discovery + labels over {copies} copies: lens {labels_s:.4f} s, os.walk {floor_s:.4f} s, "
              f"ratio {labels_s / floor_s:.2f} (for information: `lens deploy guides` also reads every Kustomization)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm-d-root", type=Path, default=default_root())
    parser.add_argument("--copies", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--max-overlays", type=int, default=None, help="Render only the first N overlays.")
    args = parser.parse_args(argv)
    root = args.llm_d_root.resolve()
    if not (root / "guides").is_dir():
        print(f"no llm-d tree at {root}: pass --llm-d-root or set LENS_LLM_D_ROOT")
        return 2
    print(f"deploy benchmark: llm-d tree {root}")
    bench_render(root, args.repeat, args.max_overlays)
    bench_cli(root, args.repeat)
    bench_discovery(root, args.copies, args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
