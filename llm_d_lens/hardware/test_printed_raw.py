"""A plugin's failure reason and its distribution's metadata reach the terminal inert.

An attack plugin raised an exception whose text clears the screen, sets the window title and
prints an OSC-8 link, with Rich markup in it; its METADATA version carried an escape too. Printed
raw, ``lens hardware doctor``/``list`` and every other command's one-line notice ran them.
"""

from __future__ import annotations

import pytest

from llm_d_lens.cli.app import main
from llm_d_lens.hardware import notice
from llm_d_lens.testing.plugins import minimal_profile

ESCAPES = "\\x1b[2J\\x1b]0;owned\\x07\\x1b]8;;https://evil.example\\x1b\\\\click\\x1b]8;;\\x1b\\\\ [link=https://evil.example]x[/link]"


def hostile(plugins) -> None:
    plugins.make("evil-plugin", version="1.0\x1b[31m", module_source=f'''
        def load_profiles():
            raise RuntimeError("{ESCAPES}")
    ''', profile_entry_points={"evil": "evil_plugin_lens:load_profiles"})


@pytest.mark.parametrize("command", [["hardware", "doctor"], ["hardware", "list"]])
def test_a_hostile_reason_and_version_are_printed_escaped(command, plugins, fresh_registry, capsys) -> None:
    hostile(plugins)
    plugins.make("good-plugin", profiles={"acme": [minimal_profile("acme")]})
    fresh_registry()
    main(command)
    out = capsys.readouterr()
    printed = out.out + out.err
    assert "\x1b" not in printed and "\x07" not in printed
    assert "\\x1b[2J" in printed and "\\x1b]0;owned\\x07" in printed
    assert "[link=https://evil.example]x[/link]" in printed, "the markup was interpreted, not shown"


def test_the_one_line_notice_escapes_the_distribution_name(plugins, fresh_registry) -> None:
    plugins.make("evil\x1b]0;owned\x07", module="evil_named_lens", module_source="""
        def load_profiles():
            raise RuntimeError("no")
    """, profile_entry_points={"evil": "evil_named_lens:load_profiles"})
    registry = fresh_registry()
    line = notice.summary(registry.failures)
    assert "\x1b" not in line and "\x07" not in line and "evil\\x1b]0;owned\\x07" in line
