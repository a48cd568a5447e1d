"""``-o name`` on every list command, ``-o`` on the one-line commands, and the aliases that match the API's names."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from llm_d_lens.cli.app import main
from llm_d_lens.testing.tables import commands_offering

LLM_D = Path(__file__).resolve().parents[2] / ".." / "shared" / "upstream" / "llm-d"
CLUSTERS = "clusters:\n  - name: demo\n    demo: true\n  - name: far-away\n    context: no-such-context\n"

#: list command -> (its arguments, the names its JSON document holds, in order)
LISTS: dict[str, tuple[list[str], Any]] = {
    "hardware list": (["hardware", "list"], lambda doc: [r["id"] for r in doc if r["status"] == "registered"]),
    "hardware network": (["hardware", "network"], lambda doc: [r["id"] for r in doc]),
    "profiles list": (["profiles", "list"], lambda doc: [r["name"] for r in doc]),
    "deploy guides": (["deploy", "guides", "--llm-d-root", str(LLM_D)], lambda doc: doc["guides"]),
    "cluster list": (["cluster", "list", "--clusters", "{clusters}"], None),  # names without probing: see below
    "plan models": (["plan", "models"], lambda doc: [spec["id"] for spec in doc]),
}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def test_the_list_commands_offer_name() -> None:
    assert sorted(commands_offering("name")) == sorted(LISTS)


@pytest.mark.parametrize("command", sorted(set(LISTS) - {"cluster list"}))
def test_name_prints_one_name_a_line_as_the_document_holds_them(command: str, capsys) -> None:
    args, names_of = LISTS[command]
    if "--llm-d-root" in args and not (LLM_D / "guides").is_dir():
        pytest.skip(f"no llm-d checkout at {LLM_D}")
    code, document = run(capsys, *args, "-o", "json")
    assert code == 0
    expected = names_of(json.loads(document))
    code, out = run(capsys, *args, "-o", "name")
    assert code == 0 and out.splitlines() == expected and len(expected) > 0
    assert all(name and " " not in name for name in expected)


def test_guide_names_follow_the_guide_filter(capsys) -> None:
    if not (LLM_D / "guides").is_dir():
        pytest.skip(f"no llm-d checkout at {LLM_D}")
    code, out = run(capsys, "deploy", "guides", "--llm-d-root", str(LLM_D), "--guide", "optimized-baseline", "-o", "name")
    assert code == 0 and out == "optimized-baseline\n"


def test_cluster_names_come_from_the_file_without_asking_any_cluster(capsys, tmp_path, monkeypatch) -> None:
    clusters = tmp_path / "clusters.yaml"
    clusters.write_text(CLUSTERS, encoding="utf-8")

    def no_cluster(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("-o name asked a cluster")

    from llm_d_lens.runner import CommandRunner

    # the process itself, not the name: a module imported meanwhile must not keep a replaced class
    for start in ("_execute", "_aexecute", "_open_stream"):
        monkeypatch.setattr(CommandRunner, start, no_cluster)
    code, out = run(capsys, "cluster", "list", "--clusters", str(clusters), "-o", "name")
    assert code == 0 and out == "demo\nfar-away\n"


def test_profile_flags_as_a_line_and_as_a_list(capsys) -> None:
    code, line = run(capsys, "profiles", "flags")
    assert code == 0 and line.startswith("--")
    code, document = run(capsys, "profiles", "flags", "-o", "json")
    body = json.loads(document)
    assert code == 0 and body["flags"] == shlex.split(line) and body["command_line"] == line.strip()
    assert body["name"] == "default"


def test_compose_file_as_text_json_and_yaml(capsys) -> None:
    import yaml

    code, text = run(capsys, "profiles", "compose-file")
    assert code == 0 and text == ""  # the default profile is deployed externally: nothing, as before
    code, document = run(capsys, "profiles", "compose-file", "-o", "yaml")
    assert code == 0 and yaml.safe_load(document) == {"name": "default", "compose_file": None}
    code, _ = run(capsys, "profiles", "compose-file", "-o", "table")
    assert code == 2  # not a table: usage error naming the choices


@pytest.mark.parametrize(("alias", "name"), [
    (["drivers", "plan", "--offline", "--device-class", "dra.cpu", "-o", "json"],
     ["driver", "plan", "--offline", "--device-class", "dra.cpu", "-o", "json"]),
    (["cluster", "overview", "--demo", "-o", "json"], ["cluster", "inspect", "--demo", "-o", "json"]),
])
def test_the_api_names_are_aliases_of_the_commands(alias: list[str], name: list[str], capsys) -> None:
    code, by_alias = run(capsys, *alias)
    assert code == 0 and json.loads(by_alias)
    assert (0, by_alias) == run(capsys, *name)


def test_aliases_stay_out_of_help_and_are_listed_in_the_reference(capsys, monkeypatch) -> None:
    from llm_d_lens.cli.docs import render

    monkeypatch.setenv("COLUMNS", "120")
    _, root_help = run(capsys, "--help")
    _, cluster_help = run(capsys, "cluster", "--help")
    commands = root_help.split("Commands:", 1)[1]
    listed = [line.split()[0] for line in commands.splitlines() if line.startswith("  ") and line[2:3] != " "]
    assert "driver" in listed and "drivers" not in listed
    assert "inspect" in cluster_help and "overview" not in cluster_help.replace("/overview", "")
    reference = render()
    assert "- `lens drivers`: Same as `lens driver`." in reference
    assert "- `lens cluster overview`: Same as `lens cluster inspect`." in reference
    assert "## `lens drivers plan`" not in reference and "## `lens cluster overview`" not in reference
