"""The overview as Rich tables for ``lens cluster inspect`` (JSON and YAML print ``to_dict()``)."""

from __future__ import annotations

from typing import Any

GIB = 2**30


_VIA = {"extended-resource": "ext. resource", "dra": "DRA"}


def _dra(dra_api: bool | None) -> str:
    return {True: "served", False: "not served", None: "unknown"}[dra_api]


def _source(source: dict[str, Any]) -> str:
    if source.get("kind") == "snapshot":
        return f"snapshot {source['path']}"
    if source.get("kind") == "live":
        return f"live cluster, context {source.get('context') or '(current)'}"
    return str(source.get("name") or source.get("kind") or "cluster")


#: (header, justify, in the 80-column table) for the hardware table; `-o wide` shows every column.
#: Headers are whole distinct words (TOTAL / IN USE / FREE, not allocatable / allocated, which
#: look alike once cut) and carry their unit.
_HARDWARE_COLUMNS: tuple[tuple[str, str, bool], ...] = (
    ("HARDWARE", "left", True), ("NODES", "right", True), ("DEVICES", "right", True),
    ("PARTITIONS", "right", False), ("TOTAL", "right", True), ("IN USE", "right", True), ("FREE", "right", True),
    ("SCHEDULABLE FREE", "right", False), ("VRAM (GiB)", "right", True), ("VRAM SOURCE", "left", False),
    ("PRODUCTS", "left", False), ("VIA", "left", False),
)


def _gib(vram: dict[str, Any]) -> str:
    """VRAM as a right-aligned number under a ``(GiB)`` header; ``?`` when no device reports it."""
    if not vram["devices_with_vram"] and not vram["devices_without_vram"]:
        return "-"
    shown = f"{vram['total_bytes'] / GIB:,.1f}" if vram["devices_with_vram"] else "?"
    if vram["devices_with_vram"] and vram["devices_without_vram"]:
        shown += f" +{vram['devices_without_vram']}?"
    return shown


def overview_renderable(data: dict[str, Any], *, with_nodes: bool, wide: bool = False) -> Any:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    summary = data["summary"]
    parts: list[Any] = []
    title = (f"{_source(data['source'])}: {data['total_gpu_count']} accelerators on {summary['accelerator_nodes']} of "
             f"{summary['nodes']} nodes, {summary['available']} available; DRA API {_dra(data['dra_api'])}")
    parts.append(Text(title))
    table = Table(title_justify="left")
    shown = [(header, justify) for header, justify, default in _HARDWARE_COLUMNS if wide or default]
    for header, justify in shown:
        numeric = justify == "right"
        table.add_column(header, justify=justify, no_wrap=numeric, overflow="fold")  # type: ignore[arg-type]
    pending_notes: list[str] = []
    for bucket in data["vendors"]:
        available = str(bucket["available"])
        if bucket["overcommitted"]:
            available += f"\n[red]{bucket['overcommitted']} over[/red]"
        capacity = "; ".join(f"{key} {c['consumed']}/{c['total']} used" for key, c in bucket["capacity"].items())
        products = ", ".join(bucket["products"]) or "-"
        if capacity:
            products = f"{products}\n[dim]{capacity}[/dim]"
        if bucket["pending"]["requests"]:
            pending = f"pending: {bucket['pending']['units']} for {bucket['pending']['requests']} request(s)"
            products += f"\n[yellow]{pending}[/yellow]"
            pending_notes.append(f"{bucket['profile_id']} {pending}")
        kinds = sorted({source.split(":", 1)[0] for source in bucket["vram"]["sources"]})
        cells = {
            "HARDWARE": f"{bucket['display_name']}\n[dim]{bucket['profile_id']}[/dim]" if wide else bucket["profile_id"],
            "NODES": str(bucket["nodes"]), "DEVICES": str(bucket["devices"]), "PARTITIONS": str(bucket["partitions"]),
            "TOTAL": str(bucket["allocatable"]), "IN USE": str(bucket["allocated"]), "FREE": available,
            "SCHEDULABLE FREE": str(bucket["schedulable"]["available"]), "VRAM (GiB)": _gib(bucket["vram"]),
            "VRAM SOURCE": ", ".join(kinds) or "-", "PRODUCTS": products,
            "VIA": ", ".join(_VIA.get(m, m) for m in bucket["request_models"]) or "-",
        }
        table.add_row(*(cells[header] for header, _ in shown))
    if not data["vendors"]:
        table.add_row("[dim]no hardware any profile claims[/dim]", *[""] * (len(shown) - 1))
    parts.append(table)
    shared = [b for b in data["vendors"] if b.get("shares") or b.get("fractional")]
    for bucket in shared:
        fractions = "; ".join(f"{name} {f['allocatable']}/{f['capacity']}" for name, f in bucket["fractional"].items())
        text = f"shared {bucket['profile_id']}: {bucket['shares']} share(s) of {bucket['devices']} device(s) on " \
               f"{bucket['shared_nodes']} node(s)" if bucket.get("shares") else f"shared {bucket['profile_id']}:"
        parts.append(Text(text + (f"; declared quantities {fractions}" if fractions else "")))
    if data.get("network"):
        network = Table(title="network devices", title_justify="left")
        headers = ("NETWORK", "NODES", "NICS", "HANDLES", "IN USE", "PAIRING") + (("BENCHMARK RESOURCE",) if wide else ())
        for header in headers:
            network.add_column(header, justify="right" if header in ("NODES", "NICS", "HANDLES", "IN USE") else "left")
        for entry in data["network"]:
            row = [entry["profile_id"], str(entry["nodes"]), str(entry["nics"]), str(entry["handles"]),
                   str(entry["allocated"]), entry["pairing"]]
            network.add_row(*row, *([entry["benchmark_resource"]] if wide else []))
        parts.append(network)
    if not wide and pending_notes:
        parts.extend(Text(note, style="yellow") for note in pending_notes)
    if with_nodes:
        parts.append(_nodes_table(data["nodes"], wide=wide))
    node_notes = [(node["name"], note) for node in data["nodes"] for note in node["notes"]]
    node_notes += [(node["name"], f"{hw['profile_id']}: {note}") for node in data["nodes"] for hw in node["hardware"]
                   for note in hw["notes"]]
    unready = [n["name"] for n in data["nodes"] if not n["schedulable"]]
    if unready:
        parts.append(Text("not schedulable (NotReady or cordoned): " + ", ".join(unready), style="yellow"))
    if data["unsupported"]:
        parts.append(Text("no profile claims these (not counted):", style="bold"))
        for entry in data["unsupported"]:
            where = f" on {len(entry['nodes'])} node(s)" if entry["nodes"] else ""
            amount = f" ({entry['quantity']})" if entry["quantity"] else ""
            parts.append(Text(f"  {entry['kind']} {entry['name']}{amount}{where}"))
    if node_notes or data["notes"]:
        parts.append(Text("notes:", style="bold"))
        for note in data["notes"]:
            parts.append(Text(f"  {note}"))
        for node, note in node_notes:
            parts.append(Text(f"  {node}: {note}"))
    return Group(*parts)


#: (header, in the 80-column table) for the nodes table
_NODE_COLUMNS: tuple[tuple[str, bool], ...] = (
    ("NODE", True), ("STATUS", True), ("HARDWARE", True), ("DEVICES", False), ("PARTITIONS", False),
    ("TOTAL", False), ("IN USE", True), ("FREE", True), ("VRAM (GiB)", True), ("HELD BY", False),
)
_NUMERIC = {"DEVICES", "PARTITIONS", "TOTAL", "IN USE", "FREE", "VRAM (GiB)"}


def _nodes_table(nodes: list[dict[str, Any]], *, wide: bool = False) -> Any:
    from rich.table import Table

    table = Table(title="nodes", title_justify="left")
    shown = [header for header, default in _NODE_COLUMNS if wide or default]
    for header in shown:
        # names stay whole (a folded node name reads as two nodes); status and holders wrap at words
        whole = header in _NUMERIC or header in ("NODE", "HARDWARE")
        table.add_column(header, justify="right" if header in _NUMERIC else "left", no_wrap=whole, overflow="fold")
    for node in nodes:
        status = ("Ready" if node["ready"] else "[red]NotReady[/red]") + (" [yellow]cordoned[/yellow]" if node["cordoned"] else "")
        if not node["hardware"]:
            cells = {"NODE": node["name"], "STATUS": status, "HARDWARE": "[dim]-[/dim]"}
            table.add_row(*(cells.get(header, "") for header in shown))
            continue
        for index, hw in enumerate(node["hardware"]):
            holders = "\n".join(f"{h['holder']} ({h['count']})" for h in hw["holders"]) or "-"
            cells = {"NODE": node["name"] if index == 0 else "", "STATUS": status if index == 0 else "",
                     "HARDWARE": hw["profile_id"], "DEVICES": str(hw["devices"]), "PARTITIONS": str(hw["partitions"]),
                     "TOTAL": str(hw["allocatable"]), "IN USE": str(hw["allocated"]), "FREE": str(hw["available"]),
                     "VRAM (GiB)": _gib(hw["vram"]), "HELD BY": holders}
            table.add_row(*(cells[header] for header in shown))
    return table


def fleet_renderable(data: dict[str, Any]) -> Any:
    """``lens cluster inspect --all``: per hardware the fleet total, then each cluster's share; then the clusters."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    hardware = Table(box=None, pad_edge=False, title="fleet, per hardware", title_justify="left")
    for column in ("HARDWARE", "CLUSTER", "DEVICES", "ALLOC", "FREE", "VRAM"):
        hardware.add_column(column, overflow="fold", justify="left" if column in ("HARDWARE", "CLUSTER") else "right")
    for row in data["hardware"]:
        if not row["accelerator"] and not row["devices"]:
            continue
        hardware.add_row(row["profile_id"], "(all)", str(row["devices"]), str(row["allocated"]), str(row["available"]),
                         f"{row['vram_gib']:,.1f} GiB" if row["vram_bytes"] else "-")
        for share in row["clusters"]:
            hardware.add_row("", share["cluster"], str(share["devices"]), str(share["allocated"]), str(share["available"]),
                             f"{share['vram_bytes'] / GIB:,.1f} GiB" if share["vram_bytes"] else "-")
    clusters = Table(box=None, pad_edge=False, title="clusters", title_justify="left")
    for column in ("NAME", "KIND", "STATE"):
        clusters.add_column(column, overflow="fold")
    for member in data["clusters"]:
        if member["ok"]:
            state = f"[green]read[/green] {member['summary']['total_gpu_count']} devices, {member['summary']['nodes']} nodes"
        else:
            state = f"[red]{member['error']['code']}[/red] {member['error']['message']}"
        clusters.add_row(member["name"], member["kind"], state)
    totals = data["totals"]
    line = Text(f"{totals['clusters_read']}/{totals['clusters']} clusters read: {totals['devices']} devices, "
                f"{totals['allocated']} allocated, {totals['available']} free, {totals['vram_gib']:,.1f} GiB VRAM")
    return Group(hardware, Text(""), clusters, line)
