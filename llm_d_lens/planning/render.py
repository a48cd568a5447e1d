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
    return (f"{best['tensor_parallel']}x{best['pipeline_parallel']}", f"{best['headroom_gib']:,.1f}",
            f"{best['max_concurrency']:,}", f"{best['replicas_free']}/{best['replicas_total']}")


def plan_renderable(data: dict[str, Any], *, all_options: bool = False) -> Any:
    from rich.console import Group
    from rich.text import Text

    from llm_d_lens.terminal.output import Column, columns_table

    model, request = data["model"], data["request"]
    title = (f"{model['name']}: {request['dtype']} weights, {request['kv_dtype']} KV, "
             f"{request['concurrency']} x {request['context']:,} tokens")
    columns = [Column("POOL"), *(Column(header, numeric=True) for header in (
        "GiB/DEV", "FREE/ALL", "TPxPP", "HEADROOM GiB", "MAX SEQ", "REPLICAS"))]
    rows = []
    for pool in data["pools"]:
        memory = f"{pool['device_memory_gib']:,.1f}" if pool["device_memory_gib"] else "?"
        rows.append([pool["pool"], memory, f"{pool['free_devices']}/{pool['devices']}", *_best(pool)])
    parts: list[Any] = [columns_table(columns, rows, title=title, title_justify="left")]
    lines = [f"model: {model['parameters'] / 1e9:,.2f}B parameters ({model['parameter_source']}); "
             f"dtype from {model['dtype_source']}; KV {model['kv_values_per_token']:,} values/token = {model['kv_formula']}"]
    predictions = data.get("predictions") or {}
    predicted = predictions.get("pools") or {}
    parts.append(Text("\n".join(lines)))
    lines = []
    for pool in data["pools"]:
        lines.append(f"{pool['pool']}: {pool['verdict']}; memory from {pool['memory_source']}")
        if pool["best"]:
            lines.append(f"  memory a device: {_terms_line(pool['best'])}")
        if pool["pool"] in predicted:
            lines.extend(_prediction_lines(predicted[pool["pool"]]))
        if pool["hand_off"]:
            hand_off = pool["hand_off"]
            lines.append(f"  hand-off: {hand_off['note']}:")
            parts.append(Text("\n".join(lines)))
            # each command on a line of its own, never wrapped, so it copies and pastes whole
            for command in (c for c in (hand_off["deploy"], hand_off["evaluate"]) if c):
                parts.append(Text(command, no_wrap=True, overflow="ignore"))
            lines = []
        lines.extend(f"  note: {note}" for note in pool["notes"])
    lines.extend(f"note: {note}" for note in (*model["notes"], *data["notes"]))
    if predictions:
        targets = predictions.get("targets")
        shown = (f"; ISL {targets['isl']}, OSL {targets['osl']}, TTFT <= {targets['ttft_ms']:g} ms, "
                 f"TPOT <= {targets['tpot_ms']:g} ms, {targets['backend']}") if targets else ""
        lines.append(f"predictions: {predictions.get('message', predictions.get('state'))}{shown}")
    lines.append("KV budget = device memory x memory_utilization - weights - activation peak - non-torch, per device; "
                 "headroom = KV budget - KV cache (`-o json` shows every term's formula and source)")
    parts.append(Text("\n".join(lines)))
    if data.get("shapes") is not None:
        parts.extend(shapes_renderables(data["shapes"]))
    if all_options:
        parts.extend(_options_table(pool) for pool in data["pools"])
    return Group(*parts)


#: the ranked table shows this many shapes; `-o json` has them all
SHAPES_SHOWN = 15


def _shape_layout(shape: dict[str, Any]) -> str:
    if shape["kind"] == "disaggregated":
        return f"{shape['prefill_workers']}P:{shape['decode_workers']}D TP{shape['tensor_parallel']}"
    if shape["kind"] == "wide-ep":
        return f"EP{shape['expert_parallel']}"
    return f"TP{shape['tensor_parallel']}"


def _number(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def shapes_renderables(shapes: dict[str, Any]) -> list[Any]:
    """The ranked shapes as a table, then the chosen one's hand-off on a line of its own."""
    from rich.text import Text

    from llm_d_lens.terminal.output import Column, columns_table

    targets = shapes["targets"]
    title = (f"shapes at {targets['concurrency']} sequences a replica, ISL {targets['isl']}, OSL {targets['osl']}: "
             f"TTFT <= {targets['ttft_ms']:g} ms, TPOT <= {targets['tpot_ms']:g} ms")
    columns = [Column("#", numeric=True), Column("POOL"), Column("SHAPE"), Column("GUIDE"), Column("EST"),
               *(Column(h, numeric=True) for h in ("DEV", "TTFT ms", "TPOT ms", "OUT tok/s", "$/M OUT", "$/M IN")), Column("OK")]
    rows = []
    for i, shape in enumerate(shapes["ranked"][:SHAPES_SHOWN], 1):
        rows.append([str(i), shape["pool"], _shape_layout(shape), shape["guide"], shape["estimate"], str(shape["devices"]),
                     _number(shape["ttft_ms"], ",.0f"), _number(shape["tpot_ms"], ",.1f"),
                     _number(shape["output_tokens_per_s"], ",.0f"), _number(shape["cost_per_million_output_all_devices"], ",.3f"),
                     _number(shape["cost_per_million_input"], ",.3f"), "yes" if shape["meets"] else "no"])
    parts: list[Any] = [columns_table(columns, rows, title=title, title_justify="left")]
    lines = []
    hidden = len(shapes["ranked"]) - SHAPES_SHOWN
    if hidden > 0:
        lines.append(f"{hidden} more shape(s) in `-o json`")
    lines.append("EST roofline: the published peaks' bound (planning.performance) over the engine's measured efficiency, "
                 "1.0 where none is measured; EST aic: AIC's prediction. $/M OUT counts every device of the shape")
    lines.extend(f"note: {note}" for note in shapes["notes"])
    best = shapes.get("best")
    if best is None:
        lines.append("no shape meets both targets" if shapes["ranked"] else "no shape could be estimated")
        parts.append(Text("\n".join(lines)))
        return parts
    lines.append(f"chosen: {best['pool']} {_shape_layout(best)} ({best['guide']}); {best['hand_off']['note']}:")
    parts.append(Text("\n".join(lines)))
    parts.append(Text(best["hand_off"]["deploy"], no_wrap=True, overflow="ignore"))
    others = [s for s in shapes.get("best_per_pool", []) if s["pool"] != best["pool"]]
    if others:
        parts.append(Text("best shape on each other pool:"))
    for shape in others:
        verdict = "meets both targets" if shape["meets"] else "; ".join(shape["misses"])
        dtype = f", {shape['weights_dtype']} weights" if shape.get("weights_dtype") else ""
        parts.append(Text(f"  {shape['pool']}: {_shape_layout(shape)} ({shape['guide']}{dtype}): {verdict}; "
                          f"{shape['hand_off']['note']}:"))
        parts.append(Text(shape["hand_off"]["deploy"], no_wrap=True, overflow="ignore"))
    return parts


def _terms_line(best: dict[str, Any]) -> str:
    """vLLM's accounting of the best option, term by term, as the engine's start-up log prints it."""
    terms = {t["term"]: t for t in best.get("terms", [])}
    shown = [f"{terms['requested']['gib']:,.2f} requested" if "requested" in terms else None]
    shown += [f"- {terms[name]['gib']:,.2f} {label}" for name, label in (
        ("weights", "weights"), ("activation_peak", "activation peak"), ("non_torch", "non-torch"),
        ("extra_allowance", "extra")) if name in terms]
    graphs = terms.get("captured_graphs")
    outside = f" (graphs {graphs['gib']:,.2f} GiB outside it)" if graphs and graphs["gib"] else ""
    return " ".join(s for s in shown if s) + f" = {best['kv_budget_gib']:,.2f} GiB KV budget{outside}"


def _prediction_lines(entry: dict[str, Any]) -> list[str]:
    if entry["state"] != "predicted":
        return [f"  AIC: {entry['state']}: {entry.get('reason') or entry.get('error') or ''}".rstrip(": ")]
    lines = []
    for mode in ("aggregated", "disaggregated"):
        row = entry.get(mode)
        if row is None:
            lines.append(f"  AIC {entry['system']} {mode}: none meets the targets ({entry.get(mode + '_rejected', 0)} rejected)")
            continue
        if mode == "aggregated":
            shape = f"TP{row['tensor_parallel']} PP{row['pipeline_parallel']} DP{row['data_parallel']}"
        else:
            p, d = row["prefill"], row["decode"]
            shape = f"{p['workers']}x prefill TP{p['tensor_parallel']} + {d['workers']}x decode TP{d['tensor_parallel']}"
        lines.append(f"  AIC {entry['system']} {mode}: {shape} ({row['gpus']} GPUs): {row['throughput_per_gpu']:,.0f} tok/s/GPU, "
                     f"{row['throughput_per_user']:,.1f} tok/s/user, TTFT {row['ttft_ms']:,.0f} ms, TPOT {row['tpot_ms']:.1f} ms, "
                     f"{row['replicas_on_free_devices']} on free devices")
    return lines


def _options_table(pool: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table(title=pool["pool"], title_justify="left")
    for column in ("TPxPP", "WEIGHTS GiB", "KV KiB/TOK", "KV CACHE GiB", "HEADROOM GiB", "MAX SEQ", "REPLICAS", "WHY"):
        table.add_column(column, justify="left" if column == "WHY" else "right", overflow="fold",
                         min_width=max(len(word) for word in column.split()))
    for o in pool["options"]:
        table.add_row(f"{o['tensor_parallel']}x{o['pipeline_parallel']}", f"{o['weights_gib']:,.1f}",
                      f"{o['kv_per_token_bytes'] / KIB:,.0f}", f"{o['kv_cache_gib']:,.1f}", f"{o['headroom_gib']:,.1f}",
                      f"{o['max_concurrency']:,}", f"{o['replicas_free']}/{o['replicas_total']}", o["reason"])
    return table


def models_renderable(specs: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    table = Table(title="models Lens knows by name (any other: --model path/to/config.json); KV at bf16",
                  title_justify="left")
    for column in ("NAME", "PARAMS", "LAYERS", "HEADS/KV", "EXPERTS", "DTYPE", "KV KiB/TOK"):
        table.add_column(column, justify="left" if column == "NAME" else "right", overflow="fold",
                         min_width=max(len(word) for word in column.split()))
    for spec in specs:
        experts = f"{spec['experts']}/{spec['experts_per_token']}" if spec["experts"] else "-"
        table.add_row(spec["id"], f"{spec['parameters'] / 1e9:,.1f}B", str(spec["layers"]),
                      f"{spec['attention_heads']}/{spec['kv_heads']}", experts, spec["dtype"],
                      f"{spec['kv_values_per_token'] * 2 / KIB:,.0f}")
    return table


def devices_renderable(data: dict[str, Any]) -> Any:
    from llm_d_lens.terminal.output import Column, columns_table

    columns = [Column("PRODUCT"), Column("MEMORY GiB", numeric=True), Column("PCI"), Column("ID")]
    rows = [[d["product"] or "unknown", f"{d['memory_bytes'] / 2**30:,.2f}" if d["memory_bytes"] else "unknown",
             d["pci_bus_id"] or "-", d["uuid"] or d["serial"] or "-"] for d in data["devices"]]
    return columns_table(columns, rows, title=f"{data['hardware']}: {len(data['devices'])} device(s) from {data['source']}",
                         title_justify="left")
