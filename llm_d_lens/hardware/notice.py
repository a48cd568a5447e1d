"""The one stderr line every other command prints while some plugin is skipped.

``lens hardware list`` and ``doctor`` show each failure themselves; any other command that built
the registry gets a single warning line, so a broken plugin is never silent and never noisy.
Reads the registry only if the command built it: printing a notice must not trigger discovery.
"""

from __future__ import annotations

import sys

#: set by a command that has already shown every failure in its own output
shown = False


def summary(failures: list) -> str:
    from llm_d_lens.terminal.printable import printable

    names = [printable(f"{f.distribution.split(' ')[0]} ({f.name}: {f.kind})", 200) for f in failures]
    return (f"warning: {len(failures)} hardware plugin problem{'s' if len(failures) != 1 else ''}, skipped: "
            f"{', '.join(names)}; run 'lens hardware doctor' for the reasons")


def warn_if_problems() -> None:
    global shown
    registry = sys.modules.get("llm_d_lens.hardware.registry")  # not imported here: a command that never built it pays nothing
    built = registry.current_registry() if registry is not None else None
    already, shown = shown, False  # one command, one notice
    if already or built is None or not built.failures:
        return
    sys.stdout.flush()  # after the command's own output, not inside it
    print(summary(built.failures), file=sys.stderr)
