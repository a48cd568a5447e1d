"""The checkpoint table of docs/planning.md: each shipped config's published facts beside what Lens computes.

The configs under ``planning/testdata/checkpoints/`` hold published checkpoints' dimensions and
``published.json`` their published parameter counts and sizes with the source;
``planning/test_checkpoints.py`` holds Lens to them.
"""

from __future__ import annotations

import json
from pathlib import Path

from llm_d_lens.planning.catalogue import read_config_file

CHECKPOINTS = Path(__file__).resolve().parents[1] / "planning" / "testdata" / "checkpoints"
BEGIN, END = "<!-- checkpoint-table:begin -->", "<!-- checkpoint-table:end -->"


def render_table() -> str:
    """The docs table, from the shipped configs and their published facts."""
    lines = ["| model | kind | parameters: published / Lens | checkpoint GB: published / Lens |",
             "|---|---|---|---|"]
    published = json.loads((CHECKPOINTS / "published.json").read_text())["models"]
    for name in sorted(published):
        facts, model = published[name], read_config_file(CHECKPOINTS / name)
        params, size = model.computed_parameters, model.weight_bytes()
        lines.append(f"| {facts['hf_id']} | {facts['kind']} | {facts['parameters'] / 1e9:,.2f}B / {params / 1e9:,.2f}B "
                     f"({(params / facts['parameters'] - 1) * 100:+.2f}%) | {facts['checkpoint_bytes'] / 1e9:,.2f} / "
                     f"{size / 1e9:,.2f} ({(size / facts['checkpoint_bytes'] - 1) * 100:+.2f}%) |")
    return "\n".join(lines)


CALIBRATION_BEGIN, CALIBRATION_END = "<!-- calibration-table:begin -->", "<!-- calibration-table:end -->"


def render_calibration_table() -> str:
    """The calibration table: every published point of planning/calibration.json beside Lens's estimate."""
    from llm_d_lens.planning import calibration

    lines = ["| hardware | model | engine | batch | TP | ISL/OSL | weights/KV | published tok/s | Lens tok/s | error | source |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in calibration.rows():
        p, source = row["point"], row["source"]
        kv, product = (f"{value} (assumed)" if p.assumed == name else value for name, value in (("kv", p.kv), ("product", p.product)))
        verdict = "" if abs(row["error"]) <= calibration.LIMIT else " **miss**"
        # a figure published per device is shown so, beside Lens's estimate in the same unit
        unit, share = ("/GPU", p.tp) if p.per_device else ("", 1)
        lines.append(f"| {product} | {p.model} | {p.engine} | {p.batch:,} | {p.tp} | {p.isl}/{p.osl} | {p.weights}/{kv} | "
                     f"{p.tokens_per_s:,.0f}{unit} | {row['estimate'] / share:,.0f}{unit} | {row['error'] * 100:+.1f}%{verdict} | "
                     f"[{p.source}]({source['url']}) |")
    lines.append("")
    lines.append("| hardware profile | engine | points | compute efficiency | bandwidth efficiency | worst error |")
    lines.append("|---|---|---|---|---|---|")
    for (hardware, engine), group in calibration.groups().items():
        c, b, worst = calibration.fit(group)
        lines.append(f"| {hardware} | {engine} | {len(group)} | {c:g} | {b:g} | {worst * 100:.1f}% |")
    return "\n".join(lines)
