"""The startup benchmark runs end to end (tiny sizes; no timing thresholds)."""

import re
import subprocess
import sys
from pathlib import Path


def test_startup_benchmark_prints_ratios_and_counts_plugins():
    script = Path(__file__).with_name("startup.py")
    result = subprocess.run([sys.executable, str(script), "--runs", "1", "--plugins", "3"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for label in ("0 plugins", r"1 plugins \(cold\)", r"1 plugins \(warm\)", r"3 plugins \(cold\)", r"3 plugins \(warm\)"):
        assert re.search(rf"lens hardware list, {label}\s+median\s+[\d.]+ ms\s+ratio\s+[\d.]+x", out), label
    assert re.search(r"discovery, 0 plugins\s+median\s+[\d.]+ ms\s+profiles 6", out)
    assert re.search(r"discovery, 3 plugins\s+in-process \(before isolation\)\s+median\s+[\d.]+ ms\s+profiles 9", out)
    for how in ("cold", r"warm \(cached\)"):  # the isolated path registers every plugin too
        assert re.search(rf"discovery, 3 plugins\s+isolated, {how}\s+median\s+[\d.]+ ms\s+profiles 9\s+ratio", out), how
    assert "heavy modules imported by 'lens hardware list': none" in out
    for command in ("hardware list", "hardware resolve", "hardware show", "--help"):  # each with its ratio and the goal
        for how in ("cold", "warm"):
            assert re.search(rf"lens {re.escape(command)}, {how}\s+median\s+[\d.]+ ms\s+ratio\s+[\d.]+x\s+goal <= 4x: (met|missed)",
                             out), (command, how)
    assert re.search(r"lens cluster inspect --demo, warm\s+median\s+[\d.]+ ms\s+ratio\s+[\d.]+x$", out, re.M)
    for label in ("lens cluster inspect --demo", "lens plan --demo"):
        assert re.search(rf"{re.escape(label)}, start-up overhead\s+median\s+[\d.]+ ms\s+ratio\s+[\d.]+x  \(whole [\d.]+ ms, "
                         r"own work [\d.]+ ms\)  goal <= 4x: (met|missed)", out), label
    assert re.search(r"lens deploy render( \S+: median [\d.]+ ms, kubectl kustomize [\d.]+ ms, ratio [\d.]+x  goal <= 1.5x: "
                     r"(met|missed)|: skipped \(.+\))$", out, re.M)
    # the floors the goals sit on: the same libraries and work without Lens's command layer
    assert re.search(r"^table commands' libraries' floor \(click, msgspec, rich, the registry, one table\): median [\d.]+ ms, "
                     r"ratio [\d.]+x; lens hardware list \(warm\) [\d.]+x that floor$", out, re.M)
    if "lens deploy render: skipped" not in out:
        assert re.search(r"^deploy render's libraries' floor \(click, msgspec, yaml, the registry, kustomize\): median [\d.]+ ms, "
                         r"ratio [\d.]+x kubectl kustomize; lens deploy render [\d.]+x that floor$", out, re.M)
    assert re.search(r"^lens hardware list, 3 plugins \(warm\)\s+median\s+[\d.]+ ms\s+ratio\s+[\d.]+x  goal <= 6x: (met|missed)$",
                     out, re.M)
