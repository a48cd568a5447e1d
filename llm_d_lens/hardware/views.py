"""The columns and cells of ``lens hardware list`` and ``resolve`` tables, from plain rows.

The rows are plain data (``-o json``/``yaml`` print them as they are); the cells are what
``output.columns_table`` draws. Imports nothing heavy.
"""

from __future__ import annotations

from typing import Any

from llm_d_lens.terminal.output import Column

LIST_COLUMNS = [Column("ID"), Column("NAME"), Column("ACCESS MODES"), Column("REQUEST MODELS", wide_only=True),
                Column("LLM-D VARIANT"), Column("BENCHMARK"), Column("FROM", wide_only=True)]
RESOLVE_COLUMNS = [Column("QUERY"), Column("KEY"), Column("STATUS"), Column("ID"), Column("MATCHED BY", wide_only=True),
                   Column("DETAIL")]
_STATUS_STYLE = {"supported": "green", "unsupported": "yellow", "ambiguous": "red"}


def summary(profile: Any, origins: list[Any]) -> dict[str, Any]:
    """``hardware list``'s and ``show``'s summary of one registered profile."""
    modes = profile.effective_modes()
    return {
        "id": profile.id,
        "display_name": profile.display_name,
        "vendor": profile.vendor,
        "request_model": profile.request_model,
        "access_modes": {name: mode.request_model for name, mode in modes.items()},
        "benchmark_profile": profile.benchmark_profile,
        "upstream": [f"{variant}/{vendor}" for variant, vendor in profile.label_pairs],
        "overlay_dirs": profile.overlay_dirs,
        "origins": [str(o) for o in origins],
        "sources": sorted({"bundled" if o.kind == "bundled" else o.location for o in origins}),
    }


def registered_rows(registry: Any) -> list[dict[str, Any]]:
    """``hardware list``'s row of each registered profile."""
    return [{**summary(p, registry.origins(p.id)), "status": "registered"} for p in registry.profiles()]


def list_cells(rows: list[dict[str, Any]]) -> list[list[str]]:
    """One table row per registered profile of ``hardware list``'s rows (failures are printed below it)."""
    from llm_d_lens.terminal.printable import cell

    return [[cell(r["id"]), cell(r["display_name"]), ", ".join(r["access_modes"]),
             ", ".join(dict.fromkeys(r["access_modes"].values())), cell(", ".join(r["upstream"])),
             cell(r["benchmark_profile"]) if r["benchmark_profile"] else "[dim]none[/dim]",
             "\n".join(cell(source) for source in r["sources"])]
            for r in rows if r["status"] == "registered"]


def list_names(rows: list[dict[str, Any]]) -> list[str]:
    """``hardware list -o name``: the id of each registered profile."""
    return [r["id"] for r in rows if r["status"] == "registered"]


def list_title(count: int, version_hash: str) -> str:
    return f"{count} hardware profiles (registry {version_hash})"


def resolve_cells(results: list[dict[str, Any]]) -> list[list[str]]:
    """One table row per answer of ``hardware resolve``."""
    rows = []
    for r in results:
        detail = r["detail"] or (f"{r['matched_value']}" if r["matched_value"] else "")
        if r["status"] == "ambiguous":
            detail = f"{detail} (candidates: {', '.join(r['candidates'])})"
        rows.append([r["query"], r["key"], f"[{_STATUS_STYLE[r['status']]}]{r['status']}[/]", r["id"] or "-",
                     r["matched_by"] or "-", detail])
    return rows


def profile_document(profile: Any, registry: Any) -> dict[str, Any]:
    """One registered profile as ``GET /api/v1/hardware/{key}`` answers it: every field, aliases and origins."""
    document = profile.to_data()
    document["aliases"] = profile.aliases
    document["access_mode_details"] = {name: mode.to_data() for name, mode in profile.effective_modes().items()}
    document["upstream_label_pairs"] = [{"variant": v, "vendor": n} for v, n in profile.label_pairs]
    document["origins"] = [o.to_dict() for o in registry.origins(profile.id)]
    return document


def capabilities() -> dict[str, Any]:
    """The document ``GET /api/v1/hardware/capabilities`` answers for the process-wide registry, built afresh."""
    from llm_d_lens.hardware.registry import get_registry

    return capabilities_document(get_registry())


def capabilities_document(registry: Any) -> dict[str, Any]:
    """Every registered profile with all its fields, the registry's version hash and its load failures."""
    return {
        "version": registry.version_hash(),
        "profiles": [profile_document(p, registry) for p in registry.profiles()],
        "failures": [f.to_dict() for f in registry.failures],
    }


def network_rows(registry: Any) -> list[dict[str, Any]]:
    """One row per network device profile: what it is advertised as, how it pairs, where it came from."""
    rows = []
    for profile in registry.network_profiles():
        data = profile.to_data()
        owned = [*profile.resource_names, *profile.device_classes, *profile.dra_drivers]
        rows.append({"id": profile.id, "kind": "network", "display_name": profile.display_name, "vendor": profile.vendor,
                     "pairing": profile.network.pairing, "resource_names": data["resource_names"],
                     "resource_patterns": data["resource_patterns"], "device_classes": data["device_classes"],
                     "dra_drivers": data["dra_drivers"],
                     "benchmark_resource": profile.benchmark_network_resource or next(iter(owned), profile.id),
                     "from": [str(o) for o in registry.network_origins(profile.id)], "profile": data})
    return rows
