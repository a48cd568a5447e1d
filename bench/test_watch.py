"""Smoke test of bench/watch.py: it runs at a tiny size and prints every line it promises, ratios agreeing with the times."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "watch.py"
NUMBER = r"([\d.]+)"


def test_the_benchmark_prints_visibility_burst_collector_and_to_dict_figures_with_the_floor() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--nodes", "40", "--pods-per-node", "2", "--repeat", "3",
                           "--seconds", "0.5", "--small", "10"], capture_output=True, text=True, timeout=120, check=True)
    lines = done.stdout.splitlines()
    assert lines[0] == "cluster: 40 nodes, 80 pods"
    assert re.fullmatch(rf"memory: resident {NUMBER} MiB after the lists and the first count \(kept: 40 Node, 80 Pod, "
                        r"\d+ ResourceSlice, \d+ DeviceClass, \d+ ResourceClaim\)", lines[1]), lines[1]
    base = re.fullmatch(rf"overview, no event: {NUMBER} ms", lines[2])
    visible = re.fullmatch(rf"event visible in the next answer after {NUMBER} ms median, {NUMBER} ms worst "
                           r"\(goal <= 50 ms, 10 ms\)", lines[3])
    burst = re.fullmatch(rf"during (\d+) events in {NUMBER} s \((\d+)/s\): answer {NUMBER} ms median of (\d+); "
                         rf"ratio {NUMBER} \(goal <= 1\.2\)", lines[4])
    collector = re.fullmatch(rf"collector: longest pause {NUMBER} ms of (\d+) runs \({NUMBER} ms in all\) over a "
                             rf"{NUMBER} s run \(goal <= 50 ms\)", lines[5])
    to_dict = re.fullmatch(rf"to_dict per node: {NUMBER} us at 10 nodes, {NUMBER} us at 40; ratio {NUMBER} "
                           r"\(goal <= 1\.2\)", lines[6])
    floor = re.fullmatch(rf"to_dict floor \(a bare loop making the same dicts and lists\) per node: {NUMBER} us at "
                         rf"10 nodes, {NUMBER} us at 40; ratio {NUMBER}; to_dict's ratio over the floor's {NUMBER}", lines[7])
    after = re.fullmatch(rf"memory: resident {NUMBER} MiB after the burst, ([+-]\d+) MiB since the lists", lines[8])
    assert base and visible and burst and collector and to_dict and floor and after, lines
    listed = re.search(rf"resident {NUMBER} MiB", lines[1])
    assert listed and abs(float(after[1]) - float(listed[1]) - int(after[2])) <= 1
    assert float(visible[1]) <= float(visible[2])
    assert int(burst[1]) > 0 and int(burst[5]) > 0
    assert float(collector[1]) <= float(collector[3]) + 0.05 and float(collector[4]) >= 0.5
    ratio = float(to_dict[2]) / float(to_dict[1])
    assert abs(ratio - float(to_dict[3])) <= 0.05 * max(1.0, ratio) + 0.01
    floor_ratio = float(floor[2]) / float(floor[1])
    assert abs(floor_ratio - float(floor[3])) <= 0.05 * max(1.0, floor_ratio) + 0.01
    assert abs(float(to_dict[3]) / float(floor[3]) - float(floor[4])) <= 0.05 * max(1.0, float(floor[4])) + 0.01
