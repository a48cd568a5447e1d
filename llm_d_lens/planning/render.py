"""A plan as Rich tables for ``lens plan`` (JSON and YAML print ``Plan.to_dict()``).

One row a pool keeps the table within 80 columns; the sources of the figures follow the table,
so every number on screen can be traced back (``-o json`` has them all, per option).
"""

from __future__ import annotations

from typing import Any

KIB = 1024


def _best(pool: dict[str, Any]) -> tuple[str, str, str, str]:
    best = pool["best"]
    if best is None:
        return "-", "-", "-", "-"
    return (f"{best['tensorParallel']}x{best['pipelineParallel']}", f"{best['headroomGiB']:,.1f}",
            f"{best['maxConcurrency']:,}", f"{best['replicasFree']}/{best['replicasTotal']}")


def plan_renderable(data: dict[str, Any], *, all_options: bool = False) -> Any:
    from rich.console import Group
    from rich.text import Text

    from llm_d_lens.output import Column, columns_table

    model, request = data["model"], data["request"]
    title = (f"{model['name']}: {request['dtype']} weights, {request['kvDtype']} KV, "
             f"{request['concurrency']} x {request['context']:,} tokens")
    columns = [Column("POOL"), *(Column(header, numeric=True) for header in (
        "GiB/DEV", "FREE/ALL", "TPxPP", "HEADROOM GiB", "MAX SEQ", "REPLICAS"))]
    rows = []
    for pool in data["pools"]:
        memory = f"{pool['deviceMemoryGiB']:,.1f}" if pool["deviceMemoryGiB"] else "?"
        rows.append([pool["pool"], memory, f"{pool['freeDevices']}/{pool['devices']}", *_best(pool)])
    parts: list[Any] = [columns_table(columns, rows, title=title, title_justify="left")]
    lines = [f"model: {model['parameters'] / 1e9:,.2f}B parameters ({model['parameterSource']}); "
             f"dtype from {model['dtypeSource']}; KV {model['kvValuesPerToken']:,} values/token = {model['kvFormula']}"]
    predictions = data.get("predictions") or {}
    predicted = predictions.get("pools") or {}
    for pool in data["pools"]:
        lines.append(f"{pool['pool']}: {pool['verdict']}; memory from {pool['memorySource']}")
        if pool["pool"] in predicted:
            lines.extend(_prediction_lines(predicted[pool["pool"]]))
        if pool["handOff"]:
            lines.append(f"  deploy:   {pool['handOff']['deploy']}")
            lines.append(f"  evaluate: {pool['handOff']['evaluate']}")
        lines.extend(f"  note: {note}" for note in pool["notes"])
    lines.extend(f"note: {note}" for note in (*model["notes"], *data["notes"]))
    if predictions:
        targets = predictions.get("targets")
        shown = (f"; ISL {targets['isl']}, OSL {targets['osl']}, TTFT <= {targets['ttftMs']:g} ms, "
                 f"TPOT <= {targets['tpotMs']:g} ms, {targets['backend']}") if targets else ""
        lines.append(f"predictions: {predictions.get('message', predictions.get('state'))}{shown}")
    lines.append("headroom = usable x memory_utilization - weights - overhead - KV cache, per device "
                 "(`-o json` shows every formula and option)")
    parts.append(Text("\n".join(lines)))
    if all_options:
        parts.extend(_options_table(pool) for pool in data["pools"])
    return Group(*parts)


def _prediction_lines(entry: dict[str, Any]) -> list[str]:
    if entry["state"] != "predicted":
        return [f"  AIC: {entry['state']}: {entry.get('reason') or entry.get('error') or ''}".rstrip(": ")]
    lines = []
    for mode in ("aggregated", "disaggregated"):
        row = entry.get(mode)
        if row is None:
            lines.append(f"  AIC {entry['system']} {mode}: none meets the targets ({entry.get(mode + 'Rejected', 0)} rejected)")
            continue
        if mode == "aggregated":
            shape = f"TP{row['tensorParallel']} PP{row['pipelineParallel']} DP{row['dataParallel']}"
        else:
            p, d = row["prefill"], row["decode"]
            shape = f"{p['workers']}x prefill TP{p['tensorParallel']} + {d['workers']}x decode TP{d['tensorParallel']}"
        lines.append(f"  AIC {entry['system']} {mode}: {shape} ({row['gpus']} GPUs): {row['throughputPerGpu']:,.0f} tok/s/GPU, "
                     f"{row['throughputPerUser']:,.1f} tok/s/user, TTFT {row['ttftMs']:,.0f} ms, TPOT {row['tpotMs']:.1f} ms, "
                     f"{row['replicasOnFreeDevices']} on free devices")
    return lines


def _options_table(pool: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table(title=pool["pool"], title_justify="left")
    for column in ("TPxPP", "weights", "KV/tok", "KV cache", "headroom", "max seq", "replicas", "why"):
        table.add_column(column, justify="left" if column == "why" else "right")
    for o in pool["options"]:
        table.add_row(f"{o['tensorParallel']}x{o['pipelineParallel']}", f"{o['weightsGiB']:,.1f}",
                      f"{o['kvPerTokenBytes'] / KIB:,.0f}K", f"{o['kvCacheGiB']:,.1f}", f"{o['headroomGiB']:,.1f}",
                      f"{o['maxConcurrency']:,}", f"{o['replicasFree']}/{o['replicasTotal']}", o["reason"])
    return table


def models_renderable(specs: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    table = Table(title="models Lens knows by name (any other: --model path/to/config.json)", title_justify="left")
    for column in ("name", "params", "layers", "heads/kv", "experts", "dtype", "KV/tok bf16"):
        table.add_column(column, justify="left" if column == "name" else "right")
    for spec in specs:
        experts = f"{spec['experts']}/{spec['expertsPerToken']}" if spec["experts"] else "-"
        table.add_row(spec["id"], f"{spec['parameters'] / 1e9:,.1f}B", str(spec["layers"]),
                      f"{spec['attentionHeads']}/{spec['kvHeads']}", experts, spec["dtype"],
                      f"{spec['kvValuesPerToken'] * 2 / KIB:,.0f}K")
    return table


def devices_renderable(data: dict[str, Any]) -> Any:
    from llm_d_lens.output import Column, columns_table

    columns = [Column("PRODUCT"), Column("MEMORY GiB", numeric=True), Column("PCI"), Column("ID")]
    rows = [[d["product"] or "unknown", f"{d['memoryBytes'] / 2**30:,.2f}" if d["memoryBytes"] else "unknown",
             d["pciBusId"] or "-", d["uuid"] or d["serial"] or "-"] for d in data["devices"]]
    return columns_table(columns, rows, title=f"{data['hardware']}: {len(data['devices'])} device(s) from {data['source']}",
                         title_justify="left")
