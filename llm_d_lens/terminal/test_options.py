"""``-o`` and the cluster options are declared once (``terminal/options.py``), not again per command group."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
SHARED = {"--output", "--context", "--kubeconfig", "--cluster", "--clusters"}
#: where a command declares one of them itself, and why it must differ
OWN = {
    ("terminal/options.py", "--output"), ("terminal/options.py", "--context"), ("terminal/options.py", "--kubeconfig"),
    ("terminal/options.py", "--cluster"), ("terminal/options.py", "--clusters"),
    ("terminal/output.py", "--output"),  # list commands' -o offers name and names too (list_output_option)
    ("evaluate/profiles_cli.py", "--output"),  # compose-file and flags print one shell line: text, json or yaml
    ("incluster/cli.py", "--context"), ("incluster/cli.py", "--kubeconfig"),  # in a pod: the service account
    ("cluster/cli.py", "--kubeconfig"),  # cluster list: the kubeconfig whose contexts are listed
    ("cli/app.py", "--clusters"),  # lens serve: the clusters file the server serves (sets LENS_CLUSTERS)
    ("deploy/cli.py", "--output"),  # deploy render: yaml as kustomize prints it, or json as one kubectl List
    ("monitoring/cli.py", "--cluster"),  # telemetry: files of cluster objects for the joins (older than --cluster NAME)
    ("planning/cli.py", "--context"),  # plan: the context length in tokens (its kubeconfig context is --kube-context)
}


def declarations() -> set[tuple[str, str]]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        if path.name.startswith("test_"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "Option":
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and arg.value in SHARED:
                        found.add((path.relative_to(PACKAGE).as_posix(), arg.value))
    return found


def test_the_shared_options_are_declared_only_where_they_must_differ():
    assert declarations() - OWN == set()


def test_the_check_finds_the_shared_declarations():
    assert {("terminal/options.py", name) for name in SHARED} <= declarations()
