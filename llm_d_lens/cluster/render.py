"""The overview as Rich tables for ``lens cluster inspect`` (JSON and YAML print ``to_dict()``)."""

from __future__ import annotations

from typing import Any

GIB = 2**30


def _vram(vram: dict[str, Any]) -> str:
    if not vram["devicesWithVram"] and not vram["devicesWithoutVram"]:
        return "-"
    shown = f"{vram['totalBytes'] / GIB:,.1f} GiB" if vram["devicesWithVram"] else "unknown"
    if vram["devicesWithVram"] and vram["devicesWithoutVram"]:
        shown += f" (+{vram['devicesWithoutVram']} unknown)"
    return shown


def _vram_cell(vram: dict[str, Any]) -> str:
    kinds = sorted({source.split(":", 1)[0] for source in vram["sources"]})
    return _vram(vram) + (f"\n[dim]{', '.join(kinds)}[/dim]" if kinds else "")


_VIA = {"extended-resource": "ext. resource", "dra": "DRA"}


def _dra(dra_api: bool | None) -> str:
    return {True: "served", False: "not served", None: "unknown"}[dra_api]


def _source(source: dict[str, Any]) -> str:
    if source.get("kind") == "snapshot":
        return f"snapshot {source['path']}"
    if source.get("kind") == "live":
        return f"live cluster, context {source.get('context') or '(current)'}"
    return str(source.get("name") or source.get("kind") or "cluster")


def overview_renderable(data: dict[str, Any], *, with_nodes: bool) -> Any:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    summary = data["summary"]
    parts: list[Any] = []
    title = (f"{_source(data['source'])}: {data['totalGpuCount']} accelerators on {summary['acceleratorNodes']} of "
             f"{summary['nodes']} nodes, {summary['available']} available; DRA API {_dra(data['draApi'])}")
    table = Table(title=title, title_justify="left")
    for column, justify in (("hardware", "left"), ("nodes", "right"), ("devices", "right"), ("partitions", "right"),
                            ("allocatable", "right"), ("allocated", "right"), ("available", "right"),
                            ("schedulable\navailable", "right"), ("VRAM", "right"), ("products", "left"),
                            ("via", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for bucket in data["vendors"]:
        name = f"{bucket['displayName']}\n[dim]{bucket['profileId']}[/dim]"
        available = str(bucket["available"])
        if bucket["overcommitted"]:
            available += f"\n[red]{bucket['overcommitted']} over[/red]"
        capacity = "; ".join(f"{key} {c['consumed']}/{c['total']} used" for key, c in bucket["capacity"].items())
        products = ", ".join(bucket["products"]) or "-"
        if capacity:
            products = f"{products}\n[dim]{capacity}[/dim]"
        if bucket["pending"]["requests"]:
            products += f"\n[yellow]pending: {bucket['pending']['units']} for {bucket['pending']['requests']} request(s)[/yellow]"
        table.add_row(name, str(bucket["nodes"]), str(bucket["devices"]), str(bucket["partitions"]),
                      str(bucket["allocatable"]), str(bucket["allocated"]), available,
                      str(bucket["schedulable"]["available"]), _vram_cell(bucket["vram"]), products,
                      ", ".join(_VIA.get(m, m) for m in bucket["requestModels"]) or "-")
    if not data["vendors"]:
        table.add_row("[dim]no hardware any profile claims[/dim]", *[""] * 10)
    parts.append(table)
    if with_nodes:
        parts.append(_nodes_table(data["nodes"]))
    node_notes = [(node["name"], note) for node in data["nodes"] for note in node["notes"]]
    node_notes += [(node["name"], f"{hw['profileId']}: {note}") for node in data["nodes"] for hw in node["hardware"]
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


def _nodes_table(nodes: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    table = Table(title="nodes", title_justify="left")
    for column in ("node", "status", "hardware", "devices", "partitions", "allocatable", "allocated", "available", "VRAM"):
        table.add_column(column, no_wrap=True)
    table.add_column("held by", overflow="fold")
    for node in nodes:
        status = ("Ready" if node["ready"] else "[red]NotReady[/red]") + (" [yellow]cordoned[/yellow]" if node["cordoned"] else "")
        if not node["hardware"]:
            table.add_row(node["name"], status, "[dim]-[/dim]", *[""] * 7)
            continue
        for index, hw in enumerate(node["hardware"]):
            holders = "\n".join(f"{h['holder']} ({h['count']})" for h in hw["holders"]) or "-"
            table.add_row(node["name"] if index == 0 else "", status if index == 0 else "", hw["profileId"],
                          str(hw["devices"]), str(hw["partitions"]), str(hw["allocatable"]), str(hw["allocated"]),
                          str(hw["available"]), _vram(hw["vram"]), holders)
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
        hardware.add_row(row["profileId"], "(all)", str(row["devices"]), str(row["allocated"]), str(row["available"]),
                         f"{row['vramGiB']:,.1f} GiB" if row["vramBytes"] else "-")
        for share in row["clusters"]:
            hardware.add_row("", share["cluster"], str(share["devices"]), str(share["allocated"]), str(share["available"]),
                             f"{share['vramBytes'] / GIB:,.1f} GiB" if share["vramBytes"] else "-")
    clusters = Table(box=None, pad_edge=False, title="clusters", title_justify="left")
    for column in ("NAME", "KIND", "STATE"):
        clusters.add_column(column, overflow="fold")
    for member in data["clusters"]:
        if member["ok"]:
            state = f"[green]read[/green] {member['summary']['totalGpuCount']} devices, {member['summary']['nodes']} nodes"
        else:
            state = f"[red]{member['error']['code']}[/red] {member['error']['message']}"
        clusters.add_row(member["name"], member["kind"], state)
    totals = data["totals"]
    line = Text(f"{totals['clustersRead']}/{totals['clusters']} clusters read: {totals['devices']} devices, "
                f"{totals['allocated']} allocated, {totals['available']} free, {totals['vramGiB']:,.1f} GiB VRAM")
    return Group(hardware, Text(""), clusters, line)
