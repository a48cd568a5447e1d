"""``lens version``: what Lens is, and which kubectl, helm and kustomize it would drive.

A bug report needs these five facts together; each tool is asked through the runner (so a pinned
binary or a hung tool behaves as it does for every other command) and reported as
``not installed`` when absent or ``unknown`` when it answers with nothing Lens can read. ``-o json``
also lists every environment variable Lens reads, with its value now and its default.
"""

from __future__ import annotations

import json
import platform
import re
from typing import Any

from llm_d_lens import __version__
from llm_d_lens.errors import LensError
from llm_d_lens.runner import Runner

NOT_INSTALLED = "not installed"
UNKNOWN = "unknown"

#: tool -> the argv that prints its client version without contacting a cluster
TOOL_ARGV: dict[str, list[str]] = {
    "kubectl": ["kubectl", "version", "--client", "-o", "json"],
    "helm": ["helm", "version", "--short"],
    "kustomize": ["kustomize", "version"],
}

_SEMVER = re.compile(r"v?\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.-]+)?")


def _parse(tool: str, stdout: str) -> str:
    """The version string in a tool's answer; kubectl's is JSON, the others print it in text."""
    if tool == "kubectl":
        try:
            version = json.loads(stdout).get("clientVersion", {}).get("gitVersion")
        except (ValueError, AttributeError):
            version = None
        return version or UNKNOWN
    match = _SEMVER.search(stdout)
    return match.group(0) if match else UNKNOWN


def tool_version(runner: Runner, tool: str) -> str:
    """One tool's client version, ``not installed`` when absent, ``unknown`` when it fails."""
    if runner.which(tool) is None:
        return NOT_INSTALLED
    try:
        result = runner.run(TOOL_ARGV[tool], timeout=10, check=False)
    except LensError:
        return UNKNOWN
    return _parse(tool, result.stdout) if result.ok else UNKNOWN


def versions(runner: Runner) -> dict[str, Any]:
    """Lens, Python and each tool, and every setting Lens reads, as ``lens version -o json`` prints them."""
    from llm_d_lens import settings

    report: dict[str, Any] = {"lens": __version__, "python": platform.python_version()}
    for tool in TOOL_ARGV:
        report[tool] = tool_version(runner, tool)
    report["settings"] = settings.listing()
    return report


def versions_table(report: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table(box=None, show_header=True)
    table.add_column("COMPONENT")
    table.add_column("VERSION")
    for component, version in report.items():
        if component != "settings":  # every variable Lens reads: -o json or yaml lists them
            table.add_row(component, str(version))
    return table
